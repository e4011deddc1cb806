import Hummingbird
import NIOCore
import NIOHTTP2

extension SinkServer {
    /// Breaks the connection a push came on, as a connection fault says: closes it, after an HTTP/2 `GOAWAY`
    /// whose last stream is the one before the push's (so that the client knows the push was not processed) for
    /// ``Fault/Connection/goaway``. Over HTTP/1.1 both close the connection.
    static func breakConnection(_ kind: Fault.Connection, context: SinkRequestContext) async {
        guard context.isHTTP2, let connection = context.channel.parent else {
            try? await context.channel.close()
            return
        }
        if kind == .goaway {
            let stream = try? await context.channel.getOption(HTTP2StreamChannelOptions.streamID).get()
            let last = stream.map { HTTP2StreamID(max(0, Int($0) - 2)) } ?? .rootStream
            let frame = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))
            try? await connection.writeAndFlush(frame)
        }
        try? await connection.close()
    }
}
