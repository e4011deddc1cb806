import BadgeWire
import Foundation
import Metrics
import Synchronization

/// The sink's in-memory store: every recorded push and the active faults, safe to share between requests.
///
/// All state sits behind one `Mutex`; work that does not need it (JSON validation, encoding headers,
/// rendering JSON) happens outside the lock.
public final class SinkState: Sendable {
    /// The largest APNs body accepted, as real APNs: bigger ones get 413 `PayloadTooLarge`.
    public static let maximumAPNsPayloadBytes = 4096

    private struct State {
        var log: ReceivedPushLog
        var faults: FaultTable
        var nextSeq = 1
        /// `badgepipe_sink_pushes_total` by provider and status, made once each.
        var counters: [String: Counter] = [:]
    }

    private let state: Mutex<State>

    /// Creates an empty store.
    /// - Parameters:
    ///   - randomSeed: The seed of the draws for faults with a `rate`; nil for a random seed.
    ///   - maxDeliveries: The most deliveries kept; the oldest are dropped beyond it.
    public init(randomSeed: UInt64? = nil, maxDeliveries: Int = 1_000_000) {
        let seed = randomSeed ?? UInt64.random(in: .min ... .max)
        self.state = Mutex(State(log: ReceivedPushLog(capacity: maxDeliveries), faults: FaultTable(seed: seed)))
    }

    /// Records a push and decides its answer.
    ///
    /// The answer is `refusal` when given (the request's credentials were refused), else an error when the
    /// request is malformed (APNs: empty body → 400 `PayloadEmpty`, body over 4096 bytes → 413 `PayloadTooLarge`,
    /// no token → 400 `MissingDeviceToken`; FCM: no token → 400 `INVALID_ARGUMENT`), else the first active fault
    /// that matches and fires (translated for FCM), else 200.
    /// - Parameters:
    ///   - provider: The service the push is addressed to.
    ///   - token: The device token; for FCM, `message.token` from the body, or empty when it has none.
    ///   - headers: The request headers; names are lowercased. Credential headers (`authorization`,
    ///     `proxy-authorization`) are not kept.
    ///   - authorization: What the sink checked of the `authorization` header. When nil and `headers` has one, only
    ///     its scheme is recorded, as not verified.
    ///   - body: The request body as received.
    ///   - receivedAt: When it was received.
    ///   - http2: Whether it came over HTTP/2 (else HTTP/1.1).
    ///   - refusal: The status and reason to answer with instead of looking further.
    /// - Returns: The answer to send, with the `seq` it was recorded under.
    public func record<Body: Collection<UInt8>>(
        provider: PushProvider,
        token: String,
        headers: [(name: String, value: String)],
        authorization: RecordedAuthorization? = nil,
        body: Body,
        receivedAt: Date = Date(),
        http2: Bool = false,
        refusal: (status: Int, reason: String)? = nil
    ) -> PushAnswer {
        let authorization =
            authorization
            ?? headers.first { $0.name.lowercased() == "authorization" }.map {
                RecordedAuthorization.unverified($0.value)
            }
        let bodyIsJSON = JSONValue.isWellFormed(body)
        let (blob, headersLength) = ReceivedPushBlob.encode(headers: headers, body: body)
        let milliseconds = Timestamp.milliseconds(of: receivedAt)
        let rejection =
            refusal.map { ($0.status, Optional($0.reason)) }
            ?? Self.rejection(provider: provider, token: token, bodySize: body.count)
        let (seq, status, reason, counter) = self.state.withLock { state -> (Int, Int, String?, Counter) in
            var status = 200
            var reason: String?
            if let rejection {
                (status, reason) = rejection
            } else if let fault = state.faults.fire(token: token) {
                switch provider {
                case .apns:
                    (status, reason) = fault
                case .fcm:
                    let error = FCMError(fault: fault.status, reason: fault.reason)
                    (status, reason) = (error.status, error.errorCode)
                }
            }
            let seq = state.nextSeq
            state.nextSeq += 1
            state.log.append(
                seq: seq,
                provider: provider,
                token: token,
                blob: blob,
                headersLength: headersLength,
                bodyIsJSON: bodyIsJSON,
                status: status,
                reason: reason,
                authorization: authorization,
                receivedAtMilliseconds: milliseconds,
                httpVersion: http2 ? .http2 : .http1
            )
            let key = "\(provider.rawValue) \(status)"
            let counter: Counter
            if let made = state.counters[key] {
                counter = made
            } else {
                counter = Counter(
                    label: "badgepipe_sink_pushes_total",
                    dimensions: [("provider", provider.rawValue), ("status", "\(status)")])
                state.counters[key] = counter
            }
            return (seq, status, reason, counter)
        }
        counter.increment()
        return PushAnswer(
            seq: seq,
            provider: provider,
            status: status,
            reason: reason,
            receivedAt: Timestamp(millisecondsSinceEpoch: milliseconds).date
        )
    }

    /// The recorded pushes, oldest first.
    /// - Parameters:
    ///   - token: Only this token's; nil for all.
    ///   - after: Only those with a greater `seq`; nil for all.
    ///   - limit: At most this many (the oldest that match); nil for all.
    public func receivedPushes(token: String? = nil, after: Int? = nil, limit: Int? = nil) -> [ReceivedPush] {
        self.snapshot(token: token, after: after, limit: limit).receivedPushes
    }

    /// The body of `GET /deliveries`: `{"deliveries": [...]}` with the same filters as
    /// ``receivedPushes(token:after:limit:)``.
    public func receivedPushesJSON(token: String? = nil, after: Int? = nil, limit: Int? = nil) -> [UInt8] {
        self.snapshot(token: token, after: after, limit: limit).json
    }

    /// How many pushes are recorded.
    public var count: Int {
        self.state.withLock { $0.log.count }
    }

    /// The `seq` the next push will get.
    public var nextSeq: Int {
        self.state.withLock { $0.nextSeq }
    }

    /// Forgets every delivery and resets the counters; `seq` goes on from where it was.
    /// - Returns: How many deliveries were forgotten.
    @discardableResult
    public func clear() -> Int {
        let old = self.state.withLock { state -> ReceivedPushLog in
            let old = state.log
            state.log = ReceivedPushLog(capacity: old.capacity)
            return old
        }
        // The old store is freed here, outside the lock.
        return old.count
    }

    /// Adds a fault after the active ones.
    public func addFault(_ fault: Fault) {
        self.state.withLock { $0.faults.add(fault) }
    }

    /// Removes every fault.
    /// - Returns: How many were active.
    @discardableResult
    public func clearFaults() -> Int {
        self.state.withLock { $0.faults.removeAll() }
    }

    /// The active faults in insertion order; `times` is how many more pushes each fires for.
    public func faults() -> [Fault] {
        self.state.withLock { $0.faults.all }
    }

    /// The counters of the recorded pushes.
    public func stats() -> SinkStats {
        self.state.withLock { $0.log.stats }
    }

    private func snapshot(token: String?, after: Int?, limit: Int?) -> ReceivedPushSnapshot {
        self.state.withLock { $0.log.snapshot(token: token, after: after, limit: limit) }
    }

    private static func rejection(provider: PushProvider, token: String, bodySize: Int) -> (Int, String?)? {
        switch provider {
        case .apns:
            if token.isEmpty {
                return (400, "MissingDeviceToken")
            }
            if bodySize == 0 {
                return (400, "PayloadEmpty")
            }
            if bodySize > Self.maximumAPNsPayloadBytes {
                return (413, "PayloadTooLarge")
            }
            return nil
        case .fcm:
            return token.isEmpty ? (400, "INVALID_ARGUMENT") : nil
        }
    }
}
