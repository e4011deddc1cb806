import BadgeWire
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

extension SinkServer {
    /// The most pushes `GET /events` replays when a client connects (the newest); older ones are in
    /// `/deliveries`.
    static let eventReplayLimit = 5000
    /// The most pushes sent in one batch of events.
    static let eventBatchLimit = 500
    /// How often an idle event stream gets a comment, so that proxies and clients see it alive.
    static let eventKeepAlive = Duration.seconds(15)

    /// Adds `GET /events`: server-sent events, one `push` event per recorded push (`id` its seq, `data` what a
    /// phone shows of it, as ``eventJSON(_:in:)`` writes it), from `Last-Event-ID` or `?after=SEQ` (at most the
    /// newest ``eventReplayLimit``; by default, from now), then live as pushes are recorded. The stream is woken
    /// by pushes and ends on graceful shutdown. Streams have their own bound, ``SinkState/maxEventStreams``
    /// (`--max-event-streams`; beyond, 503 `too_many_streams`), apart from the requests that wait (`--max-waiters`):
    /// open web views never make a `?wait=` answer 503.
    func addEventRoutes(to router: Router<SinkRequestContext>) {
        let state = self.state
        router.get("/events") { request, _ -> Response in
            let query = try SinkQuery(request.uri.queryParameters)
            let lastEventID = request.headers[HTTPFields.Element.Name("Last-Event-ID")!].flatMap { Int($0) }
            let newest = state.nextSeq - 1
            let start = try max(
                lastEventID ?? query.integer("after", range: 0...Int.max) ?? newest,
                newest - Self.eventReplayLimit)
            guard let slot = EventStreamSlot(state: state) else {
                throw SinkError(
                    code: .tooManyStreams, message: "\(state.maxEventStreams) event streams are open already",
                    httpStatus: 503)
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=UTF-8"
            headers[.cacheControl] = "no-cache"
            // The body holds the stream's place: given back when the body is done with, also when it never ran
            // (the client left before the head was written).
            let body = ResponseBody { writer in
                defer { withExtendedLifetime(slot) {} }
                let stopping = Atomic(false)
                try await withGracefulShutdownHandler {
                    try await Self.streamEvents(from: start, state: state, to: &writer) {
                        stopping.load(ordering: .relaxed)
                    }
                } onGracefulShutdown: {
                    stopping.store(true, ordering: .relaxed)
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: headers, body: body)
        }
    }

    /// Writes the events of the pushes after `seq` until `stopping` or the client leaves.
    private static func streamEvents(
        from seq: Int, state: SinkState, to writer: inout any ResponseBodyWriter, stopping: () -> Bool
    ) async throws {
        var after = seq
        var idle = ContinuousClock.now
        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
        while !stopping() && !Task.isCancelled {
            let batch = state.snapshot(DeliveryFilter(after: after, limit: Self.eventBatchLimit))
            guard let last = batch.records.last else {
                // Woken by the next push, or after a second to look at `stopping`.
                if (try? await state.wait(for: after, tokens: nil, until: .now + .seconds(1), pool: .streams)) == nil {
                    try await Task.sleep(for: .seconds(1))
                }
                if ContinuousClock.now - idle >= Self.eventKeepAlive {
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    idle = .now
                }
                continue
            }
            var text: [UInt8] = []
            for record in batch.records {
                text.append(contentsOf: "id: \(record.seq)\nevent: push\ndata: ".utf8)
                text.append(contentsOf: Self.eventJSON(record, in: batch))
                text.append(contentsOf: "\n\n".utf8)
            }
            try await writer.write(ByteBuffer(bytes: text))
            after = Int(last.seq)
            idle = .now
        }
    }

    /// One push as the web view shows it: `{"seq", "provider", "token", "status", "reason", "delay_ms",
    /// "received_at", "http_version", "environment", "topic", "kind", "type", "badge", "badge_version", "title",
    /// "body", "thread"}`, read from its body as `/devices` reads it.
    static func eventJSON(_ record: ReceivedPushRecord, in snapshot: ReceivedPushSnapshot) -> [UInt8] {
        let (headers, body) = snapshot.bytes(of: record)
        let content = PushContent(body: body, provider: record.provider)
        var topic = content.fcmTopic
        ReceivedPushBlob.forEachHeader(in: headers) { name, value in
            if name.elementsEqual("apns-topic".utf8) {
                topic = String(decoding: value, as: UTF8.self)
            }
        }
        var writer = JSONWriter(capacity: 256)
        writer.raw("{\"seq\":")
        writer.int(Int(record.seq))
        writer.raw(record.provider == .apns ? ",\"provider\":\"apns\",\"token\":" : ",\"provider\":\"fcm\",\"token\":")
        writer.string(snapshot.tokens[Int(record.token)])
        writer.raw(",\"status\":")
        writer.int(Int(record.status))
        writer.raw(",\"reason\":")
        Self.write(record.reason == 0 ? nil : snapshot.reasons[Int(record.reason)], into: &writer)
        writer.raw(",\"delay_ms\":")
        writer.int(Int(record.delayMilliseconds))
        writer.raw(",\"received_at\":\"")
        Timestamp(millisecondsSinceEpoch: record.receivedAtMilliseconds).writeRFC3339Milliseconds(into: &writer.bytes)
        writer.raw(record.httpVersion == .http2 ? "\",\"http_version\":\"2\"" : "\",\"http_version\":\"1.1\"")
        writer.raw(",\"environment\":")
        Self.write(record.environment.name, into: &writer)
        writer.raw(",\"topic\":")
        Self.write(topic, into: &writer)
        writer.raw(",\"kind\":")
        writer.string(content.kind.rawValue)
        writer.raw(",\"type\":")
        Self.write(content.type, into: &writer)
        writer.raw(",\"badge\":")
        Self.write(content.badge, into: &writer)
        writer.raw(",\"badge_version\":")
        Self.write(content.badgeVersion, into: &writer)
        writer.raw(",\"title\":")
        Self.write(content.title, into: &writer)
        writer.raw(",\"body\":")
        Self.write(content.body, into: &writer)
        writer.raw(",\"thread\":")
        Self.write(content.thread, into: &writer)
        writer.raw("}")
        return writer.bytes
    }

    private static func write(_ text: String?, into writer: inout JSONWriter) {
        if let text {
            writer.string(text)
        } else {
            writer.raw("null")
        }
    }

    private static func write(_ number: Int?, into writer: inout JSONWriter) {
        if let number {
            writer.int(number)
        } else {
            writer.raw("null")
        }
    }
}

/// One open `GET /events` stream's place among ``SinkState/maxEventStreams``, taken when it is made and given back
/// when it is released, whatever became of the response that held it.
final class EventStreamSlot: Sendable {
    private let state: SinkState

    /// Takes a place; nil when every place is taken.
    init?(state: SinkState) {
        guard state.openEventStream() else { return nil }
        self.state = state
    }

    deinit { self.state.closeEventStream() }
}
