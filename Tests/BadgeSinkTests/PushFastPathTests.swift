import Foundation
import SinkTestSupport
import Testing

@testable import BadgeSink

/// The push endpoints over a socket are answered in the channel pipeline (``PushFastPath``), in process by the
/// router: both must answer and record every push alike.
@Suite("Push fast path")
struct PushFastPathTests {
    /// One request: method, path, body and headers.
    struct Case: Sendable {
        var path: String
        var body: [UInt8]
        var headers: [(String, String)] = []
    }

    static let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    /// Pushes the fast path takes, pushes it leaves to the router (a query, an odd token, a body over the limit),
    /// and malformed ones.
    static let cases: [Case] = [
        Case(path: "/3/device/\(token)", body: Array("{\"aps\":{\"badge\":3}}".utf8), headers: [("apns-id", "x-1")]),
        Case(
            path: "/sandbox/3/device/\(token)", body: Array("{\"aps\":{\"alert\":\"hi\"}}".utf8),
            headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert"), ("apns-id", "x-2")]),
        Case(path: "/3/device/\(token)", body: [], headers: [("apns-id", "x-3")]),
        Case(
            path: "/3/device/\(token)", body: Array(("{\"pad\":\"" + String(repeating: "x", count: 5000) + "\"}").utf8),
            headers: [("apns-id", "x-4")]),
        Case(path: "/3/device/\(token)?q=1", body: Array("{\"aps\":{}}".utf8), headers: [("apns-id", "x-5")]),
        Case(path: "/3/device/odd%20token", body: Array("{\"aps\":{}}".utf8), headers: [("apns-id", "x-6")]),
        Case(path: "/3/device/\(token)", body: Array("not json".utf8), headers: [("apns-id", "x-7")]),
        Case(
            path: "/3/device/\(token)", body: Array("{\"aps\":{}}".utf8),
            headers: [("apns-id", "x-9"), ("apns-id", "x-10"), ("Connection", "keep-alive")]),
        Case(
            path: "/3/device/\(token)", body: Array("{\"aps\":{}}".utf8),
            headers: [("apns-id", "x-11"), ("authorization", "bearer abc.def.ghi"), ("connection", "Keep-Alive")]),
        Case(
            path: "/3/device/\(token)", body: Array(repeating: UInt8(ascii: "x"), count: 70_000),
            headers: [("apns-id", "x-8")]),
        Case(
            path: "/v1/projects/demo-1/messages:send",
            body: Array("{\"message\":{\"token\":\"fcm-1\",\"data\":{\"badge\":\"2\"}}}".utf8)),
        Case(path: "/v1/projects/demo/messages:send", body: Array("{\"message\":{}}".utf8)),
        Case(path: "/v1/projects/demo/messages:send", body: Array("{".utf8)),
        Case(
            path: "/v1/projects/demo/messages:send", body: Array(repeating: UInt8(ascii: " "), count: 70_000)),
    ]

    @Test("the socket answers every push as the router does, and records it alike")
    func sameAsRouter() async throws {
        let routed = try await RouterSink.withSink { sink in try await Self.run(Self.cases, on: sink) }
        let (piped, fast) = try await TestSink.withSink { sink in
            (try await Self.run(Self.cases, on: sink), sink.state.recordedUnlessFaulted.load(ordering: .relaxed))
        }
        // Recorded: all but the two bodies over the request limit; in the pipeline: all but those and the three the
        // fast path leaves to the router (a query, a token with an escape, a header given twice).
        #expect(fast == 9)
        #expect(routed.answers.count == Self.cases.count)
        for (index, (router, socket)) in zip(routed.answers, piped.answers).enumerated() {
            #expect(router == socket, "case \(index): \(Self.cases[index].path)")
        }
        #expect(routed.deliveries == piped.deliveries)
        #expect(routed.deliveries.count == 12)
    }

    @Test("an APNs push without apns-id gets a new UUID; with faults active the router answers")
    func apnsIDAndFaults() async throws {
        try await TestSink.withSink { sink in
            let first = try await sink.pushAPNs(Self.token)
            let second = try await sink.pushAPNs(Self.token)
            #expect(first.status == 200)
            let id = try #require(first.headers["apns-id"])
            #expect(UUID(uuidString: id) != nil)
            #expect(second.headers["apns-id"] != id)
            #expect(first.headers["date"]?.hasSuffix(" GMT") == true)
            try await sink.addFault("{\"token\":\"\(Self.token)\",\"status\":410,\"times\":1}")
            let gone = try await sink.pushAPNs(Self.token)
            #expect(gone.status == 410)
            #expect(gone.json["reason"] as? String == "Unregistered")
            #expect(gone.json["timestamp"] is Int)
            try await sink.addFault("{\"token\":\"\(Self.token)\",\"delay_ms\":300,\"times\":1}")
            let started = ContinuousClock.now
            let late = try await sink.pushAPNs(Self.token)
            #expect(late.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(sink.state.count == 4)
            #expect(sink.state.recordedUnlessFaulted.load(ordering: .relaxed) == 2)
            _ = try await sink.send("DELETE", "/faults")
            #expect(try await sink.pushAPNs(Self.token).status == 200)
            #expect(sink.state.count == 5)
            #expect(sink.state.recordedUnlessFaulted.load(ordering: .relaxed) == 3)
        }
    }

    @Test("a new apns-id is a lowercase UUID, different each time")
    func newAPNsID() {
        let ids = (0..<100).map { _ in SinkServer.newAPNsID() }
        for id in ids {
            #expect(id.count == 36)
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
        }
        #expect(Set(ids).count == 100)
    }

    @Test("the date header is IMF-fixdate")
    func dateFormat() {
        #expect(HTTPDateCache.format(seconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDateCache.format(seconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    /// What a case's answer shows, its generated parts left out.
    struct Answer: Equatable {
        var status: Int
        var body: String
        var contentType: String?
        var apnsID: String?
    }

    /// Sends `cases` to `sink`; the answers, and the recorded deliveries without their time.
    static func run(
        _ cases: [Case], on sink: some SinkRequests
    ) async throws -> (answers: [Answer], deliveries: [String]) {
        var answers: [Answer] = []
        for request in cases {
            let answer = try await sink.send("POST", request.path, body: request.body, headers: request.headers)
            answers.append(
                Answer(
                    status: answer.status, body: answer.text, contentType: answer.headers["content-type"],
                    apnsID: answer.headers["apns-id"]))
        }
        var deliveries: [String] = []
        for var delivery in try await sink.deliveries() {
            delivery["received_at"] = nil
            delivery["http_version"] = nil
            var headers = delivery["headers"] as? [String: Any] ?? [:]
            for name in ["user-agent", "host", "content-length", "connection"] {
                headers[name] = nil
            }
            delivery["headers"] = headers
            let data = try JSONSerialization.data(withJSONObject: delivery, options: [.sortedKeys])
            deliveries.append(String(decoding: data, as: UTF8.self))
        }
        return (answers, deliveries)
    }
}
