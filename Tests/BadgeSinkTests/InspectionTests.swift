import Foundation
import Testing

@Suite("Inspection API over HTTP")
struct InspectionTests {
    @Test("GET /deliveries filters by token, by after, and by both")
    func filters() async throws {
        try await RouterSink.withSink { sink in
            for token in ["a", "b", "a", "b", "a"] {
                #expect(try await sink.pushAPNs(token).status == 200)
            }
            let all = try await sink.deliveries()
            #expect(all.map { $0["seq"] as? Int } == [1, 2, 3, 4, 5])
            let byToken = try await sink.deliveries("?token=a")
            #expect(byToken.map { $0["seq"] as? Int } == [1, 3, 5])
            let afterTwo = try await sink.deliveries("?after=2")
            #expect(afterTwo.map { $0["seq"] as? Int } == [3, 4, 5])
            let both = try await sink.deliveries("?token=a&after=2")
            #expect(both.map { $0["seq"] as? Int } == [3, 5])
            #expect(try await sink.deliveries("?token=b&after=4").isEmpty)
            #expect(try await sink.deliveries("?token=nobody").isEmpty)
            #expect(try await sink.deliveries("?after=0").count == 5)

            let bad = try await sink.send("GET", "/deliveries?after=two")
            #expect(bad.status == 400)
            #expect((bad.json["error"] as? [String: Any])?["code"] as? String == "invalid_query")
        }
    }

    @Test("DELETE /deliveries forgets deliveries and resets stats, but seq goes on")
    func deleteResets() async throws {
        try await RouterSink.withSink { sink in
            for index in 0..<3 {
                _ = try await sink.pushAPNs("t\(index)")
            }
            let deleted = try await sink.send("DELETE", "/deliveries")
            #expect(deleted.status == 200)
            #expect(try await sink.deliveries().isEmpty)
            let stats = try await sink.send("GET", "/stats").json
            #expect(stats["received"] as? Int == 0)
            #expect((stats["by_status"] as? [String: Int])?.isEmpty == true)

            #expect(try await sink.pushFCM("f1").json["name"] as? String == "projects/demo/messages/4")
            #expect(try await sink.deliveries().map { $0["seq"] as? Int } == [4])
        }
    }

    @Test("GET /stats counts pushes by status")
    func stats() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"gone\",\"status\":410,\"reason\":\"Unregistered\"}")
            _ = try await sink.pushAPNs("t1")
            _ = try await sink.pushFCM("t2")
            _ = try await sink.pushAPNs("gone")
            _ = try await sink.pushFCM("gone")
            let stats = try await sink.send("GET", "/stats")
            #expect(stats.status == 200)
            #expect(stats.json["received"] as? Int == 4)
            #expect(stats.json["by_status"] as? [String: Int] == ["200": 2, "410": 1, "404": 1])
        }
    }
}
