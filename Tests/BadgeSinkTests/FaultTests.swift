import Foundation
import Testing

@Suite("Faults over HTTP")
struct FaultTests {
    @Test("a fault for one token answers 410 Unregistered to that token only")
    func faultForOneToken() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"dead-token\",\"status\":410,\"reason\":\"Unregistered\"}")
            for _ in 0..<2 {
                let dead = try await sink.pushAPNs("dead-token")
                #expect(dead.status == 410)
                #expect(dead.json["reason"] as? String == "Unregistered")
                let timestamp = try #require(dead.json["timestamp"] as? Int)
                #expect(timestamp > 1_600_000_000_000)
                #expect(dead.headers["apns-id"] != nil)
            }
            let alive = try await sink.pushAPNs("live-token")
            #expect(alive.status == 200)

            let deliveries = try await sink.deliveries()
            #expect(deliveries.map { $0["status"] as? Int } == [410, 410, 200])
            #expect(deliveries.map { $0["reason"] as? String } == ["Unregistered", "Unregistered", nil])
        }
    }

    @Test("a fault with times: 2 fires twice, then pushes succeed")
    func timesThenSuccess() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"status\":429,\"reason\":\"TooManyRequests\",\"times\":2}")
            let listed = try await sink.send("GET", "/faults")
            let faults = try #require(listed.json["faults"] as? [[String: Any]])
            #expect(faults.count == 1)
            #expect(faults.first?["times"] as? Int == 2)
            #expect(faults.first?["token"] is NSNull)

            var statuses: [Int] = []
            for index in 0..<4 {
                statuses.append(try await sink.pushAPNs("token-\(index)").status)
            }
            #expect(statuses == [429, 429, 200, 200])
            let after = try await sink.send("GET", "/faults")
            #expect((after.json["faults"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("a fault with rate: 0.3 fires for roughly 30% of pushes")
    func rate() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"status\":503,\"reason\":\"ServiceUnavailable\",\"rate\":0.3}")
            let failures = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var failed = 0
                        for index in 0..<125 {
                            let answer = try await sink.pushAPNs("token-\(worker)-\(index)")
                            if answer.status == 503 {
                                failed += 1
                            } else {
                                #expect(answer.status == 200)
                            }
                        }
                        return failed
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect((200...400).contains(failures))
            let stats = try await sink.send("GET", "/stats").json
            #expect(stats["received"] as? Int == 1000)
            #expect((stats["by_status"] as? [String: Int])?["503"] == failures)
        }
    }

    @Test("the first matching fault in insertion order applies; DELETE /faults removes all")
    func orderAndDelete() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"t1\",\"status\":400,\"reason\":\"BadDeviceToken\"}")
            try await sink.addFault("{\"status\":500}")
            #expect(try await sink.pushAPNs("t1").json["reason"] as? String == "BadDeviceToken")
            let other = try await sink.pushAPNs("t2")
            #expect(other.status == 500)
            #expect(other.json["reason"] as? String == "InternalServerError")

            let deleted = try await sink.send("DELETE", "/faults")
            #expect(deleted.status == 200)
            #expect(try await sink.pushAPNs("t1").status == 200)
            #expect(try await sink.pushAPNs("t2").status == 200)
        }
    }

    @Test(
        "invalid fault bodies are answered 400 with a JSON error",
        arguments: [
            "", "not json", "[]", "{}", "{\"status\":200}", "{\"status\":600}", "{\"status\":\"410\"}",
            "{\"status\":410,\"rate\":1.5}", "{\"status\":410,\"rate\":-0.1}", "{\"status\":410,\"times\":0}",
            "{\"status\":410,\"times\":2.5}", "{\"status\":410,\"token\":\"\"}", "{\"status\":410,\"token\":5}",
            "{\"status\":410,\"reason\":\"\"}",
        ]
    )
    func invalidFaults(body: String) async throws {
        try await RouterSink.withSink { sink in
            let answer = try await sink.send("POST", "/faults", json: body)
            #expect(answer.status == 400)
            #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
            let error = try #require(answer.json["error"] as? [String: Any])
            #expect(error["code"] as? String == "invalid_fault")
            #expect((error["message"] as? String)?.isEmpty == false)
            let listed = try await sink.send("GET", "/faults")
            #expect((listed.json["faults"] as? [Any])?.isEmpty == true)
        }
    }
}
