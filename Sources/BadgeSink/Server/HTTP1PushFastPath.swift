import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Answers pushes over plain HTTP/1.1 from the request's bytes, first in the connection's pipeline: before NIO's
/// HTTP/1 decoder, Swift HTTP Types' conversion and Hummingbird's router. A push costs one strict read of its head
/// (``HTTP1RequestHead``), its record and an answer written as bytes; the answers of one read are flushed together.
///
/// It takes the pushes ``FastPush`` describes, when no request passed on to the router is still unanswered on the
/// connection (so that answers stay in order), and answers them as the route does. Every other request it frames
/// (its head and `content-length`) and passes on to the decoder whole and unchanged; pushes while faults are active
/// too. A head it does not read (see ``HTTP1RequestHead``), or one over ``maxHeadBytes``, leaves the connection to
/// the decoder for good, with every byte not yet passed on.
///
/// Buffers: a head up to ``maxHeadBytes``; a push's body up to the sink's `--max-request-bytes` (a longer one goes
/// to the router, which refuses it); bodies passed on are passed as they come.
final class HTTP1PushFastPath: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest request head read here; a longer one leaves the connection to the decoder.
    static let maxHeadBytes = 16 * 1024

    private enum Mode {
        /// Between requests: looking for the end of the next head, the first `searched` bytes searched already.
        case heads(searched: Int)
        /// A push whose head is read, until its body is in.
        case push(FastPush, headLength: Int, bodyLength: Int)
        /// Passing on the rest of a request's body to the decoder.
        case passing(remaining: Int)
        /// Passing everything on.
        case decoderOnly
    }

    private let answerer: FastPushAnswerer
    private let maxBody: Int
    private let unanswered: UnansweredRequests
    private var mode = Mode.heads(searched: 0)
    /// Bytes read and not handled yet.
    private var pending: ByteBuffer?
    private var answered = false
    /// Whether bytes went on to the decoder since the last read completed: only then do the handlers after this one
    /// hear of the read's completion (a read answered here whole is nothing to them).
    private var passedOn = false
    private var dateCache = HTTPDateCache()

    init(answerer: FastPushAnswerer, maxBody: Int, unanswered: UnansweredRequests) {
        self.answerer = answerer
        self.maxBody = maxBody
        self.unanswered = unanswered
    }

    private var isDecoderOnly: Bool {
        if case .decoderOnly = self.mode { true } else { false }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if self.isDecoderOnly {
            context.fireChannelRead(data)
            return
        }
        var bytes = self.unwrapInboundIn(data)
        if self.pending == nil {
            self.pending = bytes
        } else {
            self.pending!.writeBuffer(&bytes)
        }
        self.handlePending(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.answered {
            self.answered = false
            context.flush()
        }
        if self.passedOn || self.isDecoderOnly {
            self.passedOn = false
            context.fireChannelReadComplete()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            self.leaveToDecoder(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.leaveToDecoder(context: context)
        context.fireChannelInactive()
    }

    /// Answers or passes on what `pending` holds, as far as it goes.
    private func handlePending(context: ChannelHandlerContext) {
        while var bytes = self.pending, bytes.readableBytes > 0 {
            switch self.mode {
            case .decoderOnly:
                self.pending = nil
                self.passOn(bytes, context: context)
            case .passing(let remaining):
                let part = bytes.readSlice(length: min(remaining, bytes.readableBytes))!
                self.pending = bytes
                self.mode =
                    remaining > part.readableBytes
                    ? .passing(remaining: remaining - part.readableBytes) : .heads(searched: 0)
                self.passOn(part, context: context)
            case .push(let push, let headLength, let bodyLength):
                guard bytes.readableBytes >= headLength + bodyLength else { return }
                let request = bytes.readSlice(length: headLength + bodyLength)!
                self.pending = bytes
                self.mode = .heads(searched: 0)
                self.answer(push, request: request, headLength: headLength, context: context)
            case .heads(let searched):
                let end = bytes.withUnsafeReadableBytes { HTTP1RequestHead.end(in: $0, searchingFrom: searched) }
                switch end {
                case .notYet where bytes.readableBytes <= Self.maxHeadBytes:
                    self.mode = .heads(searched: bytes.readableBytes)
                    return
                case .notYet, .bareLineFeed:
                    self.leaveToDecoder(context: context)
                case .at(let length):
                    let head =
                        length > Self.maxHeadBytes
                        ? nil
                        : bytes.withUnsafeReadableBytes {
                            HTTP1RequestHead(UnsafeRawBufferPointer(rebasing: $0[..<length]))
                        }
                    guard let head else {
                        self.leaveToDecoder(context: context)
                        break
                    }
                    if self.unanswered.count == 0,
                        let push = FastPush(
                            isPost: head.method == "POST", path: head.target, headers: head.headers,
                            maxBody: self.maxBody)
                    {
                        self.mode = .push(push, headLength: length, bodyLength: head.contentLength)
                    } else {
                        self.unanswered.count += 1
                        let part = bytes.readSlice(length: length)!
                        self.pending = bytes
                        self.mode =
                            head.contentLength > 0 ? .passing(remaining: head.contentLength) : .heads(searched: 0)
                        self.passOn(part, context: context)
                    }
                }
            }
        }
        self.pending = nil
    }

    /// Passes `bytes` on to the decoder.
    private func passOn(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        self.passedOn = true
        context.fireChannelRead(self.wrapInboundOut(bytes))
    }

    /// Passes on what is pending, and everything after it.
    private func leaveToDecoder(context: ChannelHandlerContext) {
        guard !self.isDecoderOnly else { return }
        self.mode = .decoderOnly
        let bytes = self.pending
        self.pending = nil
        if let bytes, bytes.readableBytes > 0 {
            self.passOn(bytes, context: context)
        }
    }

    /// Records `push` (`request` is its head and body) and writes its answer; passes the request on to the router
    /// instead when faults are active.
    private func answer(_ push: FastPush, request: ByteBuffer, headLength: Int, context: ChannelHandlerContext) {
        let body = request.getSlice(at: request.readerIndex + headLength, length: request.readableBytes - headLength)!
        guard let reply = self.answerer.reply(to: push, body: body.readableBytesView, http2: false) else {
            self.unanswered.count += 1
            self.passOn(request, context: context)
            return
        }
        var answer = context.channel.allocator.buffer(capacity: 192 + reply.body.count)
        if reply.status == 200 {
            answer.writeString("HTTP/1.1 200 OK\r\n")
        } else {
            let status = HTTPResponse.Status(code: reply.status)
            answer.writeString("HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n")
        }
        if let apnsID = reply.apnsID {
            answer.writeString("apns-id: ")
            answer.writeString(apnsID)
            answer.writeString("\r\n")
        }
        if !reply.body.isEmpty {
            answer.writeString("content-type: application/json; charset=UTF-8\r\n")
        }
        answer.writeString("content-length: ")
        answer.writeString(String(reply.body.count))
        answer.writeString("\r\ndate: ")
        answer.writeString(self.dateCache.now())
        answer.writeString("\r\n\r\n")
        answer.writeBytes(reply.body)
        context.write(self.wrapOutboundOut(answer), promise: nil)
        self.answered = true
    }
}

/// The requests one connection's ``HTTP1PushFastPath`` passed on to the router whose answer's end has not been
/// written yet; ``RouterAnswerCounter`` counts the ends. Both run on the connection's event loop, and so does every
/// use of this.
final class UnansweredRequests {
    var count = 0
}

/// Counts the ends of the router's answers, after Swift HTTP Types' codec, for the connection's
/// ``HTTP1PushFastPath``.
final class RouterAnswerCounter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let unanswered: UnansweredRequests

    init(_ unanswered: UnansweredRequests) {
        self.unanswered = unanswered
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = self.unwrapOutboundIn(data) {
            self.unanswered.count = max(0, self.unanswered.count - 1)
        }
        context.write(data, promise: promise)
    }
}

/// Hummingbird's plain HTTP/1.1 child channel with ``HTTP1PushFastPath`` in front of its decoder and a
/// ``RouterAnswerCounter`` after its codec.
struct SinkHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel
    let answerer: FastPushAnswerer
    let maxBody: Int

    /// Called on the connection's event loop, as Hummingbird's server sets a connection up.
    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let unanswered = UnansweredRequests()
        do {
            try channel.pipeline.syncOperations.addHandler(
                HTTP1PushFastPath(answerer: self.answerer, maxBody: self.maxBody, unanswered: unanswered))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return self.http1.setup(channel: channel, logger: logger).assumeIsolated().flatMapThrowing { value in
            let codec = try channel.pipeline.syncOperations.handler(type: HTTP1ToHTTPServerCodec.self)
            try channel.pipeline.syncOperations.addHandler(RouterAnswerCounter(unanswered), position: .after(codec))
            return value
        }.nonisolated()
    }

    func handle(value: Value, logger: Logger) async {
        await self.http1.handle(value: value, logger: logger)
    }
}
