import BadgeWire
import Foundation

/// What one device (one token) shows after the pushes it was sent, as `GET /devices` lists it: the badge and
/// `badge_version` of the last push it accepted that carried a badge, that push's counts, the last alert, and
/// counters of its pushes.
public struct DeviceSummary: Sendable, Equatable {
    /// An alert as the lock screen shows it.
    public struct Alert: Sendable, Equatable {
        /// The `seq` of its push.
        public var seq: Int
        /// `aps.alert.title`.
        public var title: String?
        /// `aps.alert.body`.
        public var body: String?
        /// `aps.thread-id`.
        public var thread: String?
        /// The push's `type`.
        public var type: String?
        /// When it was received.
        public var receivedAt: Date
    }

    /// The device token.
    public let token: String
    /// The service its pushes came through.
    public var provider: PushProvider
    /// APNs: the `apns-topic` of its last push; FCM: `message.apns.headers.apns-topic` when given.
    public var topic: String?
    /// APNs: `production`, or `sandbox` for pushes sent to `/sandbox/3/device/…`; nil for FCM.
    public var environment: String?
    /// The badge of the last accepted push that carried one; nil before any.
    public var badge: Int?
    /// The `badge_version` of that push.
    public var badgeVersion: Int?
    /// The `counts` of that push.
    public var counts: [String: Int] = [:]
    /// The last accepted alert.
    public var lastAlert: Alert?
    /// Accepted alerts.
    public var alerts = 0
    /// Accepted badge-only pushes.
    public var badgeOnly = 0
    /// Every push to it, accepted or not.
    public var pushes = 0
    /// Pushes answered with an error (or a broken connection).
    public var failed = 0
    /// The `seq` of its last push.
    public var lastSeq = 0
    /// The status its last push was answered with.
    public var lastStatus = 0
    /// When its last push was received.
    public var lastReceivedAt = Date(timeIntervalSince1970: 0)

    /// A device before any push.
    init(token: String, provider: PushProvider) {
        self.token = token
        self.provider = provider
    }

    /// Folds in its next push: `status` answered, `content` read from the body, `topic` and `environment` of the
    /// request.
    mutating func apply(
        seq: Int, status: Int, receivedAt: Date, content: PushContent, topic: String?, environment: String?
    ) {
        self.pushes += 1
        self.lastSeq = seq
        self.lastStatus = status
        self.lastReceivedAt = receivedAt
        if let topic = topic ?? content.fcmTopic {
            self.topic = topic
        }
        if let environment {
            self.environment = environment
        }
        guard status == 200 else {
            self.failed += 1
            return
        }
        if let badge = content.badge {
            self.badge = badge
            self.badgeVersion = content.badgeVersion
            self.counts = content.counts
        }
        switch content.kind {
        case .alert:
            self.alerts += 1
            self.lastAlert = Alert(
                seq: seq, title: content.title, body: content.body, thread: content.thread, type: content.type,
                receivedAt: receivedAt)
        case .badgeOnly:
            self.badgeOnly += 1
        case .other:
            break
        }
    }
}

/// The device summaries, folded from the recorded pushes in `seq` order when they are read, so that recording
/// a push does no more than before. Not synchronized; ``SinkState`` guards it.
///
/// A push dropped from the log (beyond `--max-deliveries` or `--max-delivery-bytes`) before any read folded it
/// is not counted.
struct DeviceTable {
    /// Every push up to this `seq` is folded in.
    private(set) var foldedThrough = 0
    private var positions: [String: Int] = [:]
    /// The devices in the order their first push came.
    private(set) var devices: [DeviceSummary] = []

    /// Folds in the pushes of `snapshot` after ``foldedThrough``.
    mutating func fold(_ snapshot: ReceivedPushSnapshot) {
        for record in snapshot.records where Int(record.seq) > self.foldedThrough {
            let token = snapshot.tokens[Int(record.token)]
            let (headers, body) = snapshot.bytes(of: record)
            var topic: String?
            if record.provider == .apns {
                ReceivedPushBlob.forEachHeader(in: headers) { name, value in
                    if name.elementsEqual("apns-topic".utf8) {
                        topic = String(decoding: value, as: UTF8.self)
                    }
                }
            }
            let position: Int
            if let known = self.positions[token] {
                position = known
            } else {
                position = self.devices.count
                self.positions[token] = position
                self.devices.append(DeviceSummary(token: token, provider: record.provider))
            }
            self.devices[position].apply(
                seq: Int(record.seq), status: Int(record.status),
                receivedAt: Timestamp(millisecondsSinceEpoch: record.receivedAtMilliseconds).date,
                content: PushContent(body: body, provider: record.provider), topic: topic,
                environment: record.environment.name)
            self.foldedThrough = Int(record.seq)
        }
    }

    /// The summary of `token`; nil when it has had no push.
    func device(_ token: String) -> DeviceSummary? {
        self.positions[token].map { self.devices[$0] }
    }

    /// Forgets `tokens`; with nil, every device (the fold goes on from ``foldedThrough``).
    mutating func remove(tokens: Set<String>?) {
        guard let tokens else {
            self.positions = [:]
            self.devices = []
            return
        }
        self.devices.removeAll { tokens.contains($0.token) }
        self.positions = [:]
        for (index, device) in self.devices.enumerated() {
            self.positions[device.token] = index
        }
    }
}
