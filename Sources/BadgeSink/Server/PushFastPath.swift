import BadgeWire
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers the two push endpoints (APNs `POST /3/device/{token}` and `/sandbox/3/device/{token}`, FCM
/// `POST /v1/projects/{project}/messages:send`) on the connection's event loop, in the channel pipeline, before a
/// request reaches Hummingbird's router: no task, no request context, no middleware. Every other request, and any
/// push the fast path does not take, goes on to the router unchanged.
///
/// A push is taken when it is a `POST` to one of those paths with a plain token or project (letters, digits, `-`,
/// `_`, `.`), no query, a `content-length` of at most `maxBody` bytes, no `expect` header, no `connection` header
/// but `keep-alive`, none of `authorization`, `apns-topic` and `apns-id` twice, and no request passed on to the
/// router still unanswered on the connection (so that HTTP/1.1 answers stay in order). It is recorded as the route records it, and answered as the route answers, with the same status, body
/// and headers. When faults are active the push is passed on to the router after all (faults delay answers and
/// break connections, which the route does), so that the fast path only ever answers at once.
final class PushFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A push being read.
    private struct Push {
        var head: HTTPRequest
        var provider: PushProvider
        /// The APNs token or the FCM project, from the path.
        var pathValue: String
        var sandbox: Bool
        var body: ByteBuffer?
        /// The headers the answer reads.
        var fields: Fields
    }

    /// The request headers the fast path reads, found in one pass.
    private struct Fields {
        var contentLength: Int?
        /// An `expect` header, a `connection` header but `keep-alive`, or a header read here given twice: the
        /// router answers such a request.
        var routerOnly = false
        var authorization: String?
        var apnsTopic: String?
        var apnsID: String?

        init(_ headers: HTTPFields) {
            for field in headers {
                switch field.name {
                case .contentLength: Self.set(&self.contentLength, Int(field.value), &self.routerOnly)
                case .authorization: Self.set(&self.authorization, field.value, &self.routerOnly)
                case PushFastPath.apnsTopic: Self.set(&self.apnsTopic, field.value, &self.routerOnly)
                case PushFastPath.apnsID: Self.set(&self.apnsID, field.value, &self.routerOnly)
                case .connection where field.value.lowercased() == "keep-alive": continue
                case .expect, .connection: self.routerOnly = true
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

    private enum Reading {
        /// Between requests.
        case idle
        /// Reading a push the fast path answers.
        case push(Push)
        /// Passing a request's parts on to the router.
        case passing
    }

    private let state: SinkState
    private let credentials: SinkCredentials
    private let maxBody: Int
    private let logDeliveries: Bool
    private var reading = Reading.idle
    /// Requests passed on to the router whose answer's end has not been written yet.
    private var unanswered = 0
    private var dateCache = HTTPDateCache()

    init(state: SinkState, credentials: SinkCredentials, maxBody: Int, logDeliveries: Bool) {
        self.state = state
        self.credentials = credentials
        self.maxBody = maxBody
        self.logDeliveries = logDeliveries
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = self.unwrapInboundIn(data)
        switch (self.reading, part) {
        case (.idle, .head(let head)):
            if self.unanswered == 0, let push = self.push(head) {
                self.reading = .push(push)
            } else {
                self.unanswered += 1
                self.reading = .passing
                context.fireChannelRead(data)
            }
        case (.push(var push), .body(var buffer)):
            self.reading = .idle  // so that `push.body` is the only reference and grows in place
            if push.body == nil {
                push.body = buffer
            } else {
                push.body!.writeBuffer(&buffer)
            }
            self.reading = .push(push)
        case (.push(let push), .end):
            self.reading = .idle
            self.answer(push, context: context)
        case (.passing, .end):
            self.reading = .idle
            context.fireChannelRead(data)
        default:
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = self.unwrapOutboundIn(data) {
            self.unanswered = max(0, self.unanswered - 1)
        }
        context.write(data, promise: promise)
    }

    /// The push `head` starts, when the fast path takes it.
    private func push(_ head: HTTPRequest) -> Push? {
        guard head.method == .post, let path = head.path else { return nil }
        let fields = Fields(head.headerFields)
        guard let length = fields.contentLength, length <= self.maxBody, !fields.routerOnly else { return nil }
        for (prefix, sandbox) in [(Self.apnsPrefix, false), (Self.sandboxPrefix, true)] where path.hasPrefix(prefix) {
            let token = path.dropFirst(prefix.utf8.count)
            guard Self.isPlain(token.utf8) else { return nil }
            return Push(
                head: head, provider: .apns, pathValue: String(token), sandbox: sandbox, body: nil, fields: fields)
        }
        guard path.hasPrefix(Self.fcmPrefix), path.hasSuffix(Self.fcmSuffix),
            path.utf8.count > Self.fcmPrefix.utf8.count + Self.fcmSuffix.utf8.count
        else { return nil }
        let project = path.dropFirst(Self.fcmPrefix.utf8.count).dropLast(Self.fcmSuffix.utf8.count)
        guard Self.isPlain(project.utf8) else { return nil }
        return Push(head: head, provider: .fcm, pathValue: String(project), sandbox: false, body: nil, fields: fields)
    }

    /// Records `push` and writes its answer; passes it on to the router instead when faults are active.
    private func answer(_ push: Push, context: ChannelHandlerContext) {
        let body = push.body ?? ByteBuffer()
        let fields = push.fields
        let check: SinkCredentials.Check
        let token: String
        switch push.provider {
        case .apns:
            token = push.pathValue
            check = self.credentials.checkAPNs(authorization: fields.authorization, topic: fields.apnsTopic)
        case .fcm:
            token = SinkServer.fcmToken(in: body.readableBytesView)
            check = self.credentials.checkFCM(authorization: fields.authorization, project: push.pathValue)
        }
        let recorded = self.state.recordUnlessFaulted(
            provider: push.provider, token: token, headers: SinkServer.headerList(push.head.headerFields),
            authorization: check.recorded, body: body.readableBytesView,
            http2: context.channel.parent?.parent != nil, refusal: check.refusal, sandbox: push.sandbox)
        guard let answer = recorded else {
            self.unanswered += 1
            context.fireChannelRead(self.wrapInboundOut(.head(push.head)))
            if body.readableBytes > 0 {
                context.fireChannelRead(self.wrapInboundOut(.body(body)))
            }
            context.fireChannelRead(self.wrapInboundOut(.end(nil)))
            return
        }
        if self.logDeliveries {
            ReceivedPushLogLine.print(answer: answer, token: token, body: body.readableBytesView)
        }
        var headers = HTTPFields()
        let bytes: [UInt8]
        switch push.provider {
        case .apns:
            headers[Self.apnsID] = fields.apnsID ?? SinkServer.newAPNsID()
            bytes = answer.apnsBody
        case .fcm:
            bytes = answer.fcmBody(project: push.pathValue)
        }
        if !bytes.isEmpty {
            headers[.contentType] = "application/json; charset=UTF-8"
        }
        headers[.contentLength] = String(bytes.count)
        headers[.date] = self.dateCache.now()
        context.write(
            self.wrapOutboundOut(.head(HTTPResponse(status: .init(code: answer.status), headerFields: headers))),
            promise: nil)
        if !bytes.isEmpty {
            context.write(self.wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: bytes))), promise: nil)
        }
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
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
    static let apnsID = HTTPField.Name("apns-id")!
    static let apnsTopic = HTTPField.Name("apns-topic")!
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
