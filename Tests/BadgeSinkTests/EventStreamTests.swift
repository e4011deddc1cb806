import AsyncHTTPClient
import Foundation
import NIOCore
import SinkTestSupport
import TestServices
import Testing

@testable import BadgeSink

@Suite("The event stream over a socket")
struct EventStreamTests {
    /// Reads server-sent events from a response body until `count` have come.
    struct EventReader {
        var iterator: HTTPClientResponse.Body.AsyncIterator
        var buffer = ""

        /// The next `count` events' (id, data) pairs; comments and the retry line are skipped.
        mutating func next(_ count: Int) async throws -> [(id: Int, data: [String: Any])] {
            var events: [(id: Int, data: [String: Any])] = []
            while events.count < count {
                if let end = self.buffer.range(of: "\n\n") {
                    let block = self.buffer[..<end.lowerBound]
                    self.buffer.removeSubrange(..<end.upperBound)
                    var id: Int?
                    var data: String?
                    for line in block.split(separator: "\n") {
                        if line.hasPrefix("id: ") { id = Int(line.dropFirst(4)) }
                        if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                    }
                    if let id, let data {
                        let object = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
                        events.append((id, object ?? [:]))
                    }
                    continue
                }
                guard let chunk = try await self.iterator.next() else {
                    throw SinkAnswer.Failure(description: "the stream ended")
                }
                self.buffer += String(buffer: chunk)
            }
            return events
        }
    }

    @Test("GET /events replays the kept pushes, then sends new ones live; shutdown ends the stream")
    func stream() async throws {
        try await TestSink.withSink { sink in
            _ = try await sink.alert("phone", badge: 1, version: 1, title: "Hello", thread: "th-1")
            _ = try await sink.badgeOnly("phone", badge: 0, version: 2)
            var request = HTTPClientRequest(url: sink.baseURL + "/events?after=0")
            request.headers.add(name: "accept", value: "text/event-stream")
            let response = try await sink.client.execute(request, timeout: .seconds(30))
            #expect(response.status.code == 200)
            #expect(response.headers["content-type"].first?.hasPrefix("text/event-stream") == true)
            var reader = EventReader(iterator: response.body.makeAsyncIterator())
            let replayed = try await reader.next(2)
            #expect(replayed.map(\.id) == [1, 2])
            let first = replayed[0].data
            #expect(first["kind"] as? String == "alert")
            #expect(first["title"] as? String == "Hello")
            #expect(first["thread"] as? String == "th-1")
            #expect(first["badge"] as? Int == 1)
            #expect(first["topic"] as? String == "com.example.app")
            #expect(first["environment"] as? String == "production")
            #expect(replayed[1].data["kind"] as? String == "badge_only")

            try await sink.addFault("{\"token\":\"phone\",\"status\":410,\"delay_ms\":20,\"times\":1}")
            let started = ContinuousClock.now
            _ = try await sink.alert("phone", badge: 2, version: 3, title: "Live")
            let live = try await reader.next(1)
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(live.map(\.id) == [3])
            #expect(live[0].data["status"] as? Int == 410)
            #expect(live[0].data["reason"] as? String == "Unregistered")
            #expect(live[0].data["delay_ms"] as? Int == 20)
            // The harness shuts the sink down with the stream still open: it must end, not hang.
        }
    }

    @Test("Last-Event-ID resumes after that push")
    func resume() async throws {
        try await TestSink.withSink { sink in
            for version in 1...3 {
                _ = try await sink.alert("phone", badge: version, version: version, title: "n\(version)")
            }
            var request = HTTPClientRequest(url: sink.baseURL + "/events?after=0")
            request.headers.add(name: "last-event-id", value: "2")
            let response = try await sink.client.execute(request, timeout: .seconds(30))
            var reader = EventReader(iterator: response.body.makeAsyncIterator())
            #expect(try await reader.next(1).map(\.id) == [3])
        }
    }

    @Test("open event streams do not use up the waits: each pool has its own bound")
    func streamsAndWaitsAreCountedApart() async throws {
        let configuration = SinkConfiguration(host: "127.0.0.1", port: 0, maxWaiters: 2, maxEventStreams: 4)
        try await TestSink.withSink(configuration: configuration) { sink in
            // Four idle web views: more than the two waits the sink takes.
            var streams: [HTTPClientResponse] = []
            for _ in 0..<4 {
                let response = try await sink.client.execute(
                    HTTPClientRequest(url: sink.baseURL + "/events"), timeout: .seconds(30))
                #expect(response.status.code == 200)
                streams.append(response)
            }
            // Each stream parks between pushes, in the streams' pool: all four are parked.
            try await eventually("four streams parked") { sink.state.streamsWaiting == 4 }
            let fifth = try await sink.client.execute(
                HTTPClientRequest(url: sink.baseURL + "/events"), timeout: .seconds(10))
            #expect(fifth.status.code == 503)
            let error = try await fifth.body.collect(upTo: 4096)
            #expect(String(buffer: error).contains("too_many_streams"))
            // A wait still answers: it is woken by the push, not refused.
            let waiting = Task {
                try await sink.client.execute(
                    HTTPClientRequest(url: sink.baseURL + "/devices/phone?wait=5&badge=1"), timeout: .seconds(10))
            }
            try await eventually("the request waits") { sink.state.waiting == 1 }
            _ = try await sink.alert("phone", badge: 1, version: 1, title: "Hello")
            let answer = try await waiting.value
            #expect(answer.status.code == 200)
            _ = streams
        }
    }

    @Test("a stream's place is given back when its client leaves")
    func streamsLeaving() async throws {
        let configuration = SinkConfiguration(host: "127.0.0.1", port: 0, maxEventStreams: 2)
        try await TestSink.withSink(configuration: configuration) { sink in
            // Two web views on a client of their own, then closed.
            let views = HTTPClient(eventLoopGroupProvider: .singleton)
            for _ in 0..<2 {
                let response = try await views.execute(
                    HTTPClientRequest(url: sink.baseURL + "/events"), timeout: .seconds(30))
                #expect(response.status.code == 200)
            }
            let full = try await sink.client.execute(
                HTTPClientRequest(url: sink.baseURL + "/events"), timeout: .seconds(10))
            #expect(full.status.code == 503)
            try await views.shutdown()
            // A stream sees its client gone when a write fails: at a push (or a keep-alive) after the close.
            var version = 0
            try await eventually("both streams closed", timeout: .seconds(10)) {
                version += 1
                _ = try await sink.alert("phone", badge: 1, version: version, title: "Hello")
                return sink.state.eventStreamsOpen == 0
            }
            let again = try await sink.client.execute(
                HTTPClientRequest(url: sink.baseURL + "/events"), timeout: .seconds(10))
            #expect(again.status.code == 200)
        }
    }
}
