import Foundation
import Testing

@testable import BadgeSink

@Suite("Devices over HTTP")
struct DeviceTests {
    @Test("GET /devices/{token} shows the last accepted badge, its version and counts, the last alert, counters")
    func summary() async throws {
        try await RouterSink.withSink { sink in
            #expect(try await sink.alert("phone-a", badge: 1, version: 1, title: "First", thread: "p-1").status == 200)
            #expect(try await sink.alert("phone-a", badge: 2, version: 2, title: "Second", body: "Ann").status == 200)
            #expect(try await sink.badgeOnly("phone-a", badge: 1, version: 3).status == 200)
            try await sink.addFault("{\"token\":\"phone-a\",\"status\":503,\"times\":1}")
            #expect(try await sink.alert("phone-a", badge: 9, version: 4, title: "Refused").status == 503)
            _ = try await sink.alert("phone-b", badge: 5, version: 1, title: "Other", path: "/sandbox/3/device/")

            let answer = try await sink.send("GET", "/devices/phone-a")
            #expect(answer.status == 200)
            let device = answer.json
            #expect(device["token"] as? String == "phone-a")
            #expect(device["provider"] as? String == "apns")
            #expect(device["topic"] as? String == "com.example.app")
            #expect(device["environment"] as? String == "production")
            #expect(device["badge"] as? Int == 1)
            #expect(device["badge_version"] as? Int == 3)
            #expect(
                device["counts"] as? [String: Int] == [
                    "unread_notifications": 1, "unseen_notifications": 0,
                    "unread_messages": 0,
                ])
            #expect(device["alerts"] as? Int == 2)
            #expect(device["badge_only"] as? Int == 1)
            #expect(device["pushes"] as? Int == 4)
            #expect(device["failed"] as? Int == 1)
            #expect(device["last_seq"] as? Int == 4)
            #expect(device["last_status"] as? Int == 503)
            let alert = try #require(device["last_alert"] as? [String: Any])
            #expect(alert["title"] as? String == "Second")
            #expect(alert["body"] as? String == "Ann")
            #expect(alert["thread"] as? String == "t")
            #expect(alert["seq"] as? Int == 2)

            let list = try #require(try await sink.send("GET", "/devices").json["devices"] as? [[String: Any]])
            #expect(list.map { $0["token"] as? String } == ["phone-a", "phone-b"])
            #expect(list[1]["environment"] as? String == "sandbox")
            #expect(list[1]["badge"] as? Int == 5)

            let unknown = try await sink.send("GET", "/devices/nobody")
            #expect(unknown.status == 404)
            #expect((unknown.json["error"] as? [String: Any])?["code"] as? String == "unknown_device")
        }
    }

    @Test("FCM devices read the APNs payload of the message and its apns-topic")
    func fcm() async throws {
        try await RouterSink.withSink { sink in
            #expect(try await sink.fcmAlert("fcm-1", badge: 4, version: 7, title: "Hello").status == 200)
            let device = try await sink.send("GET", "/devices/fcm-1").json
            #expect(device["provider"] as? String == "fcm")
            #expect(device["badge"] as? Int == 4)
            #expect(device["badge_version"] as? Int == 7)
            #expect(device["topic"] as? String == "com.example.fcm")
            #expect(device["environment"] is NSNull)
            #expect((device["last_alert"] as? [String: Any])?["title"] as? String == "Hello")
        }
    }

    @Test("DELETE /deliveries?token= forgets those devices and deliveries only")
    func deleteOneTest() async throws {
        try await RouterSink.withSink { sink in
            for token in ["mine-1", "theirs", "mine-2", "theirs"] {
                _ = try await sink.alert(token, badge: 1, version: 1, title: token)
            }
            try await sink.addFault("{\"token\":\"theirs\",\"status\":410}")
            _ = try await sink.alert("theirs", badge: 1, version: 2, title: "x")
            let deleted = try await sink.send("DELETE", "/deliveries?token=mine-1,mine-2")
            #expect(deleted.json["deleted"] as? Int == 2)
            #expect(try await sink.deliveries().map { $0["token"] as? String } == ["theirs", "theirs", "theirs"])
            let devices = try #require(try await sink.send("GET", "/devices").json["devices"] as? [[String: Any]])
            #expect(devices.map { $0["token"] as? String } == ["theirs"])
            let stats = try await sink.send("GET", "/stats").json
            #expect(stats["received"] as? Int == 3)
            #expect(stats["by_status"] as? [String: Int] == ["200": 2, "410": 1])
            #expect(try await sink.send("DELETE", "/deliveries?token=").status == 400)
            // seq goes on
            _ = try await sink.alert("mine-1", badge: 1, version: 1, title: "again")
            #expect(try await sink.deliveries("?token=mine-1").map { $0["seq"] as? Int } == [6])
        }
    }
}
