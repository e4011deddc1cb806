import Foundation
import SinkTestSupport
import TestCredentials
import Testing

@testable import BadgeSink

@Suite("Delays and connection faults over sockets")
struct ConnectionFaultTests {
    @Test("delay_ms holds the answer back, and the delivery shows it")
    func delay() async throws {
        try await TestSink.withSink { sink in
            try await sink.addFault("{\"token\":\"slow\",\"delay_ms\":300,\"times\":1}")
            let started = ContinuousClock.now
            let slow = try await sink.pushAPNs("slow")
            #expect(slow.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(try await sink.pushAPNs("slow").status == 200)
            // The fault held back one answer only: the second delivery records no delay (its own time on a loaded
            // machine says nothing).
            let deliveries = try await sink.deliveries()
            #expect(deliveries.map { $0["delay_ms"] as? Int } == [300, nil])
            // A delay with a status: late and refused.
            try await sink.addFault("{\"status\":429,\"delay_ms\":100,\"times\":1}")
            #expect(try await sink.pushAPNs("any").status == 429)
        }
    }

    @Test("connection: close breaks the connection without an answer, once, and records status 0")
    func close() async throws {
        try await TestSink.withSink { sink in
            try await sink.addFault("{\"connection\":\"close\",\"times\":1}")
            await #expect(throws: (any Error).self) {
                _ = try await sink.pushAPNs("t1")
            }
            #expect(try await sink.pushAPNs("t1").status == 200)
            let deliveries = try await sink.deliveries()
            #expect(deliveries.map { $0["status"] as? Int } == [0, 200])
            #expect(deliveries.first?["reason"] as? String == "ConnectionClosed")
            let stats = try await sink.send("GET", "/stats").json
            #expect(stats["by_status"] as? [String: Int] == ["0": 1, "200": 1])
        }
    }

    @Test("connection: goaway sends an HTTP/2 GOAWAY: the push is not answered on that connection")
    func goaway() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        let configuration = SinkConfiguration(
            tlsCertificateFile: credentials.certificateFile, tlsKeyFile: credentials.certificateKeyFile)
        try await TestSink.withSink(configuration: configuration) { sink in
            #expect(try await sink.pushAPNs("warm").status == 200)
            try await sink.addFault("{\"connection\":\"goaway\",\"times\":1}")
            let outcome: Int
            do {
                outcome = try await sink.pushAPNs("t1").status
            } catch {
                outcome = -1
            }
            let deliveries = try await sink.deliveries()
            #expect(deliveries.count >= 2)
            #expect(deliveries[1]["status"] as? Int == 0)
            #expect(deliveries[1]["reason"] as? String == "GoAway")
            #expect(deliveries[1]["http_version"] as? String == "2")
            // Either the client gave up on the stream, or it retried it on a new connection, which was answered.
            #expect(
                outcome == -1 || (outcome == 200 && deliveries.count == 3 && deliveries[2]["status"] as? Int == 200))
            #expect(try await sink.pushAPNs("after").status == 200)
        }
    }

    @Test(
        "faults without a status, or with a bad delay or connection, are checked",
        arguments: [
            ("{\"delay_ms\":-1}", false), ("{\"delay_ms\":60001}", false), ("{\"connection\":\"reset\"}", false),
            ("{\"connection\":\"close\",\"status\":500}", false), ("{\"reason\":\"X\",\"delay_ms\":5}", false),
            ("{\"delay_ms\":0}", true), ("{\"connection\":\"goaway\",\"rate\":0.5}", true),
        ])
    func validation(body: String, valid: Bool) async throws {
        try await RouterSink.withSink { sink in
            let answer = try await sink.send("POST", "/faults", json: body)
            #expect(answer.status == (valid ? 200 : 400), "\(body)")
        }
    }

    @Test("GET /faults lists delay_ms and connection")
    func listed() async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"t\",\"connection\":\"goaway\",\"delay_ms\":5}")
            let faults = try #require(try await sink.send("GET", "/faults").json["faults"] as? [[String: Any]])
            #expect(faults.first?["connection"] as? String == "goaway")
            #expect(faults.first?["delay_ms"] as? Int == 5)
            #expect(faults.first?["status"] is NSNull)
        }
    }
}
