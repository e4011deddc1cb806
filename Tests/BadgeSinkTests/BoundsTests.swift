import Foundation
import Testing

@testable import BadgeSink

@Suite("Bounded memory")
struct BoundsTests {
    static let body = Array(("{\"aps\":{\"badge\":1},\"pad\":\"" + String(repeating: "x", count: 900) + "\"}").utf8)

    @Test("the byte cap drops the oldest deliveries and counts them in /stats")
    func byteCap() throws {
        let perPush = Self.body.count + 2 + ReceivedPushLog.recordOverhead
        let state = SinkState(randomSeed: 1, maxDeliveries: 1_000_000, maxDeliveryBytes: perPush * 10)
        for index in 0..<25 {
            _ = state.record(provider: .apns, token: "t\(index % 3)", headers: [], body: Self.body)
        }
        let stats = state.stats()
        #expect(state.count == 10)
        #expect(stats.dropped == 15)
        #expect(stats.keptBytes == perPush * 10)
        #expect(stats.droppedBytes == perPush * 15)
        #expect(stats.received == 25)
        #expect(state.receivedPushes().map(\.seq) == Array(16...25))
        #expect(state.receivedPushes(token: "t0").map(\.seq) == [16, 19, 22, 25])
    }

    @Test("storage is reclaimed: a long run under a small byte cap keeps the newest and stays within it")
    func longRun() throws {
        let perPush = Self.body.count + 2 + ReceivedPushLog.recordOverhead
        let state = SinkState(randomSeed: 1, maxDeliveries: 1_000_000, maxDeliveryBytes: perPush * 100)
        for index in 0..<5000 {
            _ = state.record(provider: .apns, token: "t\(index % 7)", headers: [], body: Self.body)
        }
        #expect(state.count == 100)
        #expect(state.stats().keptBytes <= perPush * 100)
        #expect(state.receivedPushes().first?.seq == 4901)
        // Devices folded late still show the newest pushes kept.
        #expect(state.device("t0")?.lastSeq == 4999)
    }

    @Test("request bodies are capped: a body over maxRequestBytes is answered 413 and not recorded")
    func bodyCap() async throws {
        var configuration = SinkConfiguration()
        configuration.maxRequestBytes = 8192
        try await RouterSink.withSink(configuration: configuration) { sink in
            let big = Array(repeating: UInt8(ascii: "x"), count: 9000)
            let apns = try await sink.send("POST", "/3/device/t", body: big)
            #expect(apns.status == 413)
            #expect(apns.json["reason"] as? String == "PayloadTooLarge")
            let fault = try await sink.send(
                "POST", "/faults", body: big, headers: [("content-type", "application/json")])
            #expect(fault.status == 413)
            #expect(try await sink.deliveries().isEmpty)
            // Within the cap but over APNs's 4096: recorded and answered 413 as APNs does.
            let recorded = try await sink.send("POST", "/3/device/t", body: Array(big.prefix(5000)))
            #expect(recorded.status == 413)
            #expect(try await sink.deliveries().count == 1)
        }
    }
}
