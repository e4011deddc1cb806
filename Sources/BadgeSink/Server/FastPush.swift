import BadgeWire
import Foundation
import NIOCore

/// A push the sink's fast paths answer at once, read from a request's head: by ``PushFastPath`` from Swift HTTP
/// Types' request (TLS, HTTP/2), by ``HTTP1PushFastPath`` from the request's bytes (plain HTTP/1.1). One set of
/// rules for both, so that either takes the same pushes and records them as the route does.
///
/// A push is taken when it is a `POST` to `/3/device/{token}`, `/sandbox/3/device/{token}` or
/// `/v1/projects/{project}/messages:send` with a plain token or project (letters, digits, `-`, `_`, `.`), no
/// query, a `content-length` of at most `maxBody` bytes, no `expect` header, no `connection` header but
/// `keep-alive`, and none of `authorization`, `apns-topic` and `apns-id` twice.
struct FastPush {
    var provider: PushProvider
    /// The APNs token or the FCM project, from the path.
    var pathValue: String
    var sandbox: Bool
    /// The request's headers as the route sees them: names lowercased, without the `host` the request's authority
    /// came from.
    var headers: [(name: String, value: String)]
    /// The headers the answer reads.
    var fields: Fields

    /// The request headers the fast path reads, found in one pass.
    struct Fields {
        var contentLength: Int?
        /// An `expect` header, a `connection` header but `keep-alive`, or a header read here given twice: the
        /// router answers such a request.
        var routerOnly = false
        var authorization: String?
        var apnsTopic: String?
        var apnsID: String?

        /// Reads `headers`, whose names are lowercase.
        init(_ headers: [(name: String, value: String)]) {
            for (name, value) in headers {
                switch name {
                case "content-length": Self.set(&self.contentLength, Int(value), &self.routerOnly)
                case "authorization": Self.set(&self.authorization, value, &self.routerOnly)
                case "apns-topic": Self.set(&self.apnsTopic, value, &self.routerOnly)
                case "apns-id": Self.set(&self.apnsID, value, &self.routerOnly)
                case "connection" where value.lowercased() == "keep-alive": continue
                case "expect", "connection": self.routerOnly = true
                default: continue
                }
            }
        }

        /// Sets `value`, or leaves the request to the router when the header came twice (it joins the values).
        private static func set<Value>(_ stored: inout Value?, _ value: Value?, _ routerOnly: inout Bool) {
            if stored != nil {
                routerOnly = true
            }
            stored = value
        }
    }

    /// The push a request starts, when a fast path takes it.
    /// - Parameters:
    ///   - isPost: Whether the method is `POST`.
    ///   - path: The request's path, query included.
    ///   - headers: The request's headers, names lowercased, as the route sees them.
    ///   - maxBody: The largest body the sink takes (`--max-request-bytes`).
    init?(isPost: Bool, path: String, headers: [(name: String, value: String)], maxBody: Int) {
        guard isPost else { return nil }
        let fields = Fields(headers)
        guard let length = fields.contentLength, length <= maxBody, !fields.routerOnly else { return nil }
        self.headers = headers
        self.fields = fields
        for (prefix, sandbox) in [(Self.apnsPrefix, false), (Self.sandboxPrefix, true)] where path.hasPrefix(prefix) {
            let token = path.dropFirst(prefix.utf8.count)
            guard Self.isPlain(token.utf8) else { return nil }
            self.provider = .apns
            self.pathValue = String(token)
            self.sandbox = sandbox
            return
        }
        guard path.hasPrefix(Self.fcmPrefix), path.hasSuffix(Self.fcmSuffix),
            path.utf8.count > Self.fcmPrefix.utf8.count + Self.fcmSuffix.utf8.count
        else { return nil }
        let project = path.dropFirst(Self.fcmPrefix.utf8.count).dropLast(Self.fcmSuffix.utf8.count)
        guard Self.isPlain(project.utf8) else { return nil }
        self.provider = .fcm
        self.pathValue = String(project)
        self.sandbox = false
    }

    /// Letters, digits, `-`, `_` and `.`, at least one.
    private static func isPlain(_ bytes: Substring.UTF8View) -> Bool {
        !bytes.isEmpty
            && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default:
                    false
                }
            }
    }

    private static let apnsPrefix = "/3/device/"
    private static let sandboxPrefix = "/sandbox/3/device/"
    private static let fcmPrefix = "/v1/projects/"
    private static let fcmSuffix = "/messages:send"
}

/// What a fast path answers a push with: the route's status, `apns-id` and body.
struct FastPushReply {
    var status: Int
    /// The `apns-id` header (APNs only): the request's, or a new one.
    var apnsID: String?
    var body: [UInt8]
}

/// Checks, records and answers a ``FastPush`` as the route does; shared by both fast paths.
struct FastPushAnswerer {
    let state: SinkState
    let credentials: SinkCredentials
    let logDeliveries: Bool

    /// Records `push` with `body` and returns its answer; nil, with nothing recorded, while faults are active (the
    /// router answers the push then).
    func reply(to push: FastPush, body: ByteBufferView, http2: Bool) -> FastPushReply? {
        let check: SinkCredentials.Check
        let token: String
        var bodyIsJSON: Bool?
        switch push.provider {
        case .apns:
            token = push.pathValue
            check = self.credentials.checkAPNs(authorization: push.fields.authorization, topic: push.fields.apnsTopic)
        case .fcm:
            let read = PushPayloadSummary.readFCMToken(in: body)
            token = read.token ?? ""
            bodyIsJSON = read.isStrictJSON ? true : nil
            check = self.credentials.checkFCM(authorization: push.fields.authorization, project: push.pathValue)
        }
        guard
            let answer = self.state.recordUnlessFaulted(
                provider: push.provider, token: token, headers: push.headers, authorization: check.recorded,
                body: body, bodyIsJSON: bodyIsJSON, http2: http2, refusal: check.refusal, sandbox: push.sandbox)
        else { return nil }
        if self.logDeliveries {
            ReceivedPushLogLine.print(answer: answer, token: token, body: body)
        }
        switch push.provider {
        case .apns:
            return FastPushReply(
                status: answer.status, apnsID: push.fields.apnsID ?? SinkServer.newAPNsID(), body: answer.apnsBody)
        case .fcm:
            return FastPushReply(status: answer.status, apnsID: nil, body: answer.fcmBody(project: push.pathValue))
        }
    }
}

/// The `date` header's value (RFC 9110 IMF-fixdate), formatted once a second.
struct HTTPDateCache {
    private var second = 0
    private var text = ""

    /// The current time's.
    mutating func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        if spec.tv_sec != self.second {
            self.second = spec.tv_sec
            self.text = Self.format(seconds: spec.tv_sec)
        }
        return self.text
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for `seconds` since 1970.
    static func format(seconds: Int) -> String {
        var time = seconds
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
