import BadgeSupport
import NIOCore
import NIOHTTP1

/// One request for ``HTTP1PushClient``: a POST, checked to be valid HTTP/1.1 when it was made.
struct HTTP1PushRequest: Sendable {
    /// The request target (path and query).
    var target: String
    /// The headers, `host` and `content-length` included.
    var headers: HTTPHeaders
    /// The body.
    var body: [UInt8]
    /// Written only while this window is open, checked right before the write; nil: always.
    var window: SendWindow?
}

/// The answer to an ``HTTP1PushRequest``.
struct HTTP1PushResponse: Sendable {
    /// The status code.
    var status: Int
    /// The `retry-after` header's value, if any.
    var retryAfter: String?
    /// The body.
    var body: [UInt8]
}

/// A request handed to a connection, with the caller waiting for its answer.
struct HTTP1PushJob: Sendable {
    let request: HTTP1PushRequest
    let timeout: TimeAmount
    let continuation: CheckedContinuation<HTTP1PushResponse, any Error>
}

/// The last handler of an ``HTTP1PushClient`` connection (after NIO's HTTP/1.1 client codec): writes one job's
/// request (the head and body flushed together, so they leave in one write), reads its answer, and reports the
/// connection free (or not reusable) through `finished`. The send window is read right before the write; a closed one fails
/// the job with ``HTTP1PushError/Code/vetoed`` and writes nothing. A job's timeout, a closed connection or a broken
/// answer fails it and closes the connection.
final class HTTP1PushConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTP1PushJob
    typealias OutboundOut = HTTPClientRequestPart

    /// The most bytes of an answer's body kept; a longer answer fails the job (a provider's answers are a few
    /// hundred bytes).
    static let maxResponseBody = 64 * 1024

    private struct Current {
        let job: HTTP1PushJob
        var status: Int?
        var retryAfter: String?
        var keepAlive = true
        var body: [UInt8] = []
        var timeout: Scheduled<Void>?
    }

    private var current: Current?
    private let finished: @Sendable (_ reusable: Bool) -> Void

    /// `finished` is called once per job, when it is over, with whether the connection can take another.
    init(finished: @escaping @Sendable (_ reusable: Bool) -> Void) {
        self.finished = finished
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let job = unwrapOutboundIn(data)
        promise?.succeed(())
        guard current == nil, context.channel.isActive else {
            // The pool gives a connection one job at a time and only while it is open; a closed one is reported.
            job.continuation.resume(
                throwing: HTTP1PushError(code: .connectionClosed, message: "the connection closed before the request"))
            finished(false)
            return
        }
        if let window = job.request.window, !window.isOpen {
            job.continuation.resume(
                throwing: HTTP1PushError(code: .vetoed, message: "the send window closed before the write"))
            finished(true)
            return
        }
        var entry = Current(job: job)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        entry.timeout = context.eventLoop.scheduleTask(in: job.timeout) {
            let (handler, context) = loopBound.value
            handler.fail(
                context: context,
                HTTP1PushError(code: .timedOut, message: "no answer within \(job.timeout.nanoseconds / 1_000_000) ms"))
        }
        current = entry
        let request = job.request
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: request.target)
        head.headers = request.headers
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        var body = context.channel.allocator.buffer(capacity: request.body.count)
        body.writeBytes(request.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard var entry = current else {
            // An answer nobody asked for: the connection is out of step.
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            entry.status = Int(head.status.code)
            entry.retryAfter = head.headers.first(name: "retry-after")
            entry.keepAlive = head.isKeepAlive
            current = entry
        case .body(let buffer):
            guard entry.body.count + buffer.readableBytes <= Self.maxResponseBody else {
                fail(
                    context: context,
                    HTTP1PushError(
                        code: .invalidResponse, message: "an answer longer than \(Self.maxResponseBody) bytes"))
                return
            }
            current = nil  // no copy of the body while it grows
            entry.body.append(contentsOf: buffer.readableBytesView)
            current = entry
        case .end:
            current = nil
            entry.timeout?.cancel()
            guard let status = entry.status else {
                entry.job.continuation.resume(
                    throwing: HTTP1PushError(code: .invalidResponse, message: "an answer without a head"))
                finished(false)
                context.close(promise: nil)
                return
            }
            entry.job.continuation.resume(
                returning: HTTP1PushResponse(status: status, retryAfter: entry.retryAfter, body: entry.body))
            finished(entry.keepAlive)
            if !entry.keepAlive { context.close(promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(
            context: context,
            HTTP1PushError(code: .connectionClosed, message: "the connection closed before the whole answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure =
            (error as? HTTP1PushError)
            ?? HTTP1PushError(code: .invalidResponse, message: "the exchange failed: \(error)")
        fail(context: context, failure)
    }

    /// Fails the job in flight, if any, and closes the connection.
    private func fail(context: ChannelHandlerContext, _ error: HTTP1PushError) {
        if let entry = current {
            current = nil
            entry.timeout?.cancel()
            entry.job.continuation.resume(throwing: error)
            finished(false)
        }
        context.close(promise: nil)
    }
}
