import BadgeWire
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers the push endpoints on the connection's event loop, in the channel pipeline, before a request reaches
/// Hummingbird's router: no task, no request context, no middleware. Every other request, and any push the fast
/// path does not take, goes on to the router unchanged. Over plain HTTP/1.1 ``HTTP1PushFastPath`` answers pushes
/// from the request's bytes instead; this one serves HTTP/1.1 over TLS and HTTP/2 streams.
///
/// It takes the pushes ``FastPush`` describes, when no request passed on to the router is still unanswered on the
/// connection (so that HTTP/1.1 answers stay in order). It records them as the route records them, and answers as
/// the route answers, with the same status, body and headers. When faults are active the push is passed on to the
/// router after all (faults delay answers and break connections, which the route does), so that the fast path only
/// ever answers at once.
final class PushFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Reading {
        /// Between requests.
        case idle
        /// Reading a push the fast path answers: its head, what it reads of it, and its body so far.
        case push(HTTPRequest, FastPush, ByteBuffer?)
        /// Passing a request's parts on to the router.
        case passing
    }

    private let answerer: FastPushAnswerer
    private let maxBody: Int
    private var reading = Reading.idle
    /// Requests passed on to the router whose answer's end has not been written yet.
    private var unanswered = 0
    private var dateCache = HTTPDateCache()

    init(answerer: FastPushAnswerer, maxBody: Int) {
        self.answerer = answerer
        self.maxBody = maxBody
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = self.unwrapInboundIn(data)
        switch (self.reading, part) {
        case (.idle, .head(let head)):
            if self.unanswered == 0, let path = head.path,
                let push = FastPush(
                    isPost: head.method == .post, path: path, headers: SinkServer.headerList(head.headerFields),
                    maxBody: self.maxBody)
            {
                self.reading = .push(head, push, nil)
            } else {
                self.unanswered += 1
                self.reading = .passing
                context.fireChannelRead(data)
            }
        case (.push(let head, let push, var body), .body(var buffer)):
            self.reading = .idle  // so that `body` is the only reference and grows in place
            if body == nil {
                body = buffer
            } else {
                body!.writeBuffer(&buffer)
            }
            self.reading = .push(head, push, body)
        case (.push(let head, let push, let body), .end):
            self.reading = .idle
            self.answer(head, push, body: body ?? ByteBuffer(), context: context)
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

    /// Records `push` and writes its answer; passes it on to the router instead when faults are active.
    private func answer(_ head: HTTPRequest, _ push: FastPush, body: ByteBuffer, context: ChannelHandlerContext) {
        guard
            let reply = self.answerer.reply(
                to: push, body: body.readableBytesView, http2: context.channel.parent?.parent != nil)
        else {
            self.unanswered += 1
            context.fireChannelRead(self.wrapInboundOut(.head(head)))
            if body.readableBytes > 0 {
                context.fireChannelRead(self.wrapInboundOut(.body(body)))
            }
            context.fireChannelRead(self.wrapInboundOut(.end(nil)))
            return
        }
        var headers = HTTPFields()
        if let apnsID = reply.apnsID {
            headers[Self.apnsID] = apnsID
        }
        if !reply.body.isEmpty {
            headers[.contentType] = "application/json; charset=UTF-8"
        }
        headers[.contentLength] = String(reply.body.count)
        headers[.date] = self.dateCache.now()
        context.write(
            self.wrapOutboundOut(.head(HTTPResponse(status: .init(code: reply.status), headerFields: headers))),
            promise: nil)
        if !reply.body.isEmpty {
            context.write(
                self.wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: reply.body))), promise: nil)
        }
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }

    static let apnsID = HTTPField.Name("apns-id")!
}
