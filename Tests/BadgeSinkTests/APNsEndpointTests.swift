import Foundation
import Testing

@Suite("APNs endpoint over HTTP")
struct APNsEndpointTests {
    static let token = "aaaa0000bbbb1111cccc2222dddd3333eeee4444ffff5555aaaa6666bbbb7777"

    @Test("accepts a push like APNs and records it")
    func acceptsAndRecords() async throws {
        try await RouterSink.withSink { sink in
            let apnsID = "6c2b3f1e-7d42-4a5b-9a51-0e1f3b2c4d5e"
            let payload = """
                {"aps":{"alert":{"title":"New follower","body":"Ann follows you"},"badge":3,"sound":"default"},
                 "type":"follow","notification_id":"evt-1","badge_version":17}
                """
            let answer = try await sink.send(
                "POST",
                "/3/device/\(Self.token)",
                json: payload,
                headers: [
                    ("APNs-Topic", "com.example.app"), ("apns-push-type", "alert"), ("apns-priority", "10"),
                    ("apns-id", apnsID),
                ]
            )
            #expect(answer.status == 200)
            #expect(answer.headers["apns-id"] == apnsID)
            #expect(answer.body.isEmpty)

            let deliveries = try await sink.deliveries()
            try #require(deliveries.count == 1)
            let delivery = deliveries[0]
            #expect(delivery["seq"] as? Int == 1)
            #expect(delivery["provider"] as? String == "apns")
            #expect(delivery["token"] as? String == Self.token)
            #expect(delivery["status"] as? Int == 200)
            #expect(delivery["reason"] is NSNull)
            let headers = try #require(delivery["headers"] as? [String: String])
            #expect(headers["apns-topic"] == "com.example.app")
            #expect(headers["apns-push-type"] == "alert")
            #expect(headers["apns-priority"] == "10")
            #expect(headers["apns-id"] == apnsID)
            #expect(headers.keys.allSatisfy { $0 == $0.lowercased() })
            let recorded = try #require(delivery["payload"] as? [String: Any])
            let aps = try #require(recorded["aps"] as? [String: Any])
            #expect(aps["badge"] as? Int == 3)
            #expect(recorded["badge_version"] as? Int == 17)
            #expect((aps["alert"] as? [String: Any])?["title"] as? String == "New follower")
            let receivedAt = try #require(delivery["received_at"] as? String)
            #expect(receivedAt.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil)
            let parsed = try #require(ISO8601DateFormatter.withFractionalSeconds.date(from: receivedAt))
            #expect(abs(parsed.timeIntervalSinceNow) < 3600)
        }
    }

    @Test("generates an apns-id when the request has none")
    func generatesAPNsID() async throws {
        try await RouterSink.withSink { sink in
            let answer = try await sink.pushAPNs(Self.token)
            #expect(answer.status == 200)
            let apnsID = try #require(answer.headers["apns-id"])
            #expect(UUID(uuidString: apnsID) != nil)
        }
    }

    @Test("answers empty and oversized bodies as APNs does")
    func rejectsBadBodies() async throws {
        try await RouterSink.withSink { sink in
            let empty = try await sink.send("POST", "/3/device/\(Self.token)", body: [])
            #expect(empty.status == 400)
            #expect(empty.json["reason"] as? String == "PayloadEmpty")
            let big = "{\"aps\":{\"badge\":1},\"pad\":\"" + String(repeating: "x", count: 4100) + "\"}"
            let tooLarge = try await sink.send("POST", "/3/device/\(Self.token)", json: big)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.json["reason"] as? String == "PayloadTooLarge")
            let deliveries = try await sink.deliveries()
            #expect(deliveries.map { $0["status"] as? Int } == [400, 413])
        }
    }

    @Test("records a body that is not JSON as a JSON string")
    func recordsNonJSONBodyAsString() async throws {
        try await RouterSink.withSink { sink in
            let first = try await sink.send("POST", "/3/device/\(Self.token)", json: "not json {\"a\": \n")
            #expect(first.status == 200)
            let second = try await sink.send("POST", "/3/device/\(Self.token)", body: [0xFF, 0x41, 0x22, 0x0A])
            #expect(second.status == 200)
            let raw = try await sink.send("GET", "/deliveries")
            #expect((try? JSONSerialization.jsonObject(with: Data(raw.body))) != nil)
            let deliveries = try await sink.deliveries()
            #expect(deliveries.map { $0["payload"] as? String } == ["not json {\"a\": \n", "\u{FFFD}A\"\n"])
        }
    }
}

extension ISO8601DateFormatter {
    /// A parser of `2025-01-31T12:34:56.789Z`.
    static var withFractionalSeconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
