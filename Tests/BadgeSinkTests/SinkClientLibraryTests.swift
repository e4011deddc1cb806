import BadgePipeTesting
import Foundation
import SinkTestSupport
import Testing

/// `BadgePipeTesting.SinkClient`, the Swift library for end-to-end tests, against a real sink on a socket.
@Suite("BadgePipeTesting's sink client")
struct SinkClientLibraryTests {
    @Test("waits for a badge in the sink, and a wait that times out says what the device shows")
    func waitForBadge() async throws {
        try await TestSink.withSink { sink in
            let client = BadgePipeTesting.SinkClient(url: sink.baseURL + "/")
            #expect(try await client.device("phone") == nil)
            _ = try await sink.alert("phone", badge: 1, version: 1, title: "one")
            async let waited = client.waitForBadge(3, token: "phone", timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(200))
            _ = try await sink.alert("phone", badge: 3, version: 2, title: "three", type: "follow")
            let device = try await waited
            #expect(device.badge == 3)
            #expect(device.badgeVersion == 2)
            #expect(device.alerts == 2)
            #expect(device.lastAlert?.title == "three")
            #expect(device.lastAlert?.type == "follow")
            #expect(device.counts["unread_notifications"] == 3)

            let error = try await #require(throws: SinkClientError.self) {
                try await client.waitForBadge(7, token: "phone", timeout: .milliseconds(300))
            }
            #expect(error.code == .timeout)
            #expect(error.device?.badge == 3)
            let nobody = try await #require(throws: SinkClientError.self) {
                try await client.waitForBadge(nil, token: "nobody", timeout: .milliseconds(100))
            }
            #expect(nobody.code == .timeout)
            #expect(try await client.devices().map(\.token) == ["phone"])
        }
    }

    @Test("deliveries with filters, a wait for several, clearing one test's devices, and faults")
    func deliveriesAndFaults() async throws {
        try await TestSink.withSink { sink in
            let client = BadgePipeTesting.SinkClient(url: sink.baseURL)
            _ = try await sink.alert("a", badge: 1, version: 1, title: "hello, a")
            _ = try await sink.alert("b", badge: 1, version: 1, title: "hello, b", type: "follow")
            let all = try await client.deliveries()
            #expect(all.map(\.token) == ["a", "b"])
            #expect(all[0].badge == 1)
            #expect(all[0].isAlert)
            #expect(all[0].header("apns-topic") == "com.example.app")
            #expect(all[0].apnsPayload["aps"]["alert"]["title"].string == "hello, a")
            #expect(try await client.deliveries(SinkDeliveryFilter(type: "follow")).map(\.token) == ["b"])
            #expect(try await client.deliveries(SinkDeliveryFilter(tokens: ["a"], alerts: false)).isEmpty)

            async let two = client.waitForDeliveries(2, SinkDeliveryFilter(tokens: ["a"]), timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(200))
            _ = try await sink.alert("a", badge: 2, version: 2, title: "again")
            #expect(try await two.map(\.badge) == [1, 2])
            let short = try await #require(throws: SinkClientError.self) {
                try await client.waitForDeliveries(5, SinkDeliveryFilter(tokens: ["a"]), timeout: .milliseconds(200))
            }
            #expect(short.deliveries?.count == 2)

            #expect(try await client.clear(tokens: ["a"]) == 2)
            #expect(try await client.deliveries().map(\.token) == ["b"])

            try await client.addFault(SinkFault(token: "c", status: 410, reason: "Unregistered", times: 1))
            #expect(try await sink.alert("c", badge: 1, version: 1, title: "gone").status == 410)
            #expect(try await sink.alert("c", badge: 1, version: 1, title: "back").status == 200)
            try await client.addFault(SinkFault(status: 503, reason: "ServiceUnavailable"))
            try await client.clearFaults()
            #expect(try await sink.alert("c", badge: 2, version: 2, title: "fine").status == 200)
            let failed = try await client.deliveries(SinkDeliveryFilter(tokens: ["c"], statuses: [410]))
            #expect(failed.map(\.reason) == ["Unregistered"])
        }
    }

    @Test("a sink that is not there is reported as unreachable")
    func unreachable() async throws {
        let client = BadgePipeTesting.SinkClient(url: "http://127.0.0.1:9", requestTimeout: .seconds(1))
        let error = try await #require(throws: SinkClientError.self) { try await client.devices() }
        #expect(error.code == .unreachable)
    }
}
