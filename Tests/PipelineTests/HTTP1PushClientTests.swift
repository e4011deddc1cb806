import BadgeSink
import BadgeSupport
import Foundation
import NIOCore
import SinkTestSupport
import TestServices
import Testing

@testable import BadgeDelivery

/// ``HTTP1PushClient`` against a real sink over plain HTTP/1.1 (and against a port nobody listens on).
@Suite("HTTP/1.1 push client", .timeLimit(.minutes(2)))
struct HTTP1PushClientTests {
    private static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }

    private static func push(
        _ client: HTTP1PushClient, token: String, headers: [(String, String)] = [], window: SendWindow? = nil,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> HTTP1PushResponse {
        let request = try client.request(
            path: "/3/device/\(token)",
            headers: [("apns-topic", "com.example.test"), ("apns-push-type", "alert")] + headers,
            body: Array(#"{"aps":{"badge":1}}"#.utf8), window: window)
        return try await client.execute(request, timeout: timeout)
    }

    @Test func manyConcurrentPushesAllArriveOnceOverAtMostTheBoundOfConnections() async throws {
        try await TestSink.withSink { sink in
            let client = HTTP1PushClient(
                endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: sink.baseURL + "/")), maxConnections: 4)
            defer { client.shutdown() }
            let answers = try await withThrowingTaskGroup(of: (status: Int, connections: Int).self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let response = try await Self.push(client, token: Self.token(index))
                        return (response.status, client.load.connections)
                    }
                }
                return try await group.reduce(into: [(status: Int, connections: Int)]()) { $0.append($1) }
            }
            #expect(answers.count == 300)
            #expect(answers.allSatisfy { $0.status == 200 })
            #expect(answers.map(\.connections).max() ?? 0 <= 4)
            let received = sink.state.receivedPushes()
            #expect(received.count == 300)
            #expect(Set(received.map(\.token)).count == 300, "each once")
        }
    }

    @Test func anInvalidHeaderValueOrTargetIsRefusedBeforeAnythingIsSent() async throws {
        try await TestSink.withSink { sink in
            let client = HTTP1PushClient(
                endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: sink.baseURL)), maxConnections: 1)
            defer { client.shutdown() }
            #expect(throws: HTTP1PushError.self) {
                _ = try client.request(
                    path: "/3/device/a", headers: [("apns-topic", "com.example\r\nx-injected: 1")], body: [],
                    window: nil
                )
            }
            #expect(throws: HTTP1PushError.self) {
                _ = try client.request(path: "/3/device/a b", headers: [], body: [], window: nil)
            }
            #expect(throws: HTTP1PushError.self) {
                _ = try client.request(path: "/3/device/a", headers: [("bad name", "x")], body: [], window: nil)
            }
            #expect(sink.state.receivedPushes().isEmpty)
            #expect(client.load.connections == 0)
        }
    }

    @Test func aVetoedAttemptWritesNothingAndTheConnectionCarriesTheNextPush() async throws {
        try await TestSink.withSink { sink in
            let client = HTTP1PushClient(
                endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: sink.baseURL)), maxConnections: 1)
            defer { client.shutdown() }
            // A window that closed as it was made: the connection reads it right before the write.
            await #expect(throws: HTTP1PushError(code: .vetoed, message: "the send window closed before the write")) {
                _ = try await Self.push(client, token: Self.token(1), window: SendWindow(until: .now))
            }
            let response = try await Self.push(client, token: Self.token(2))
            #expect(response.status == 200)
            #expect(sink.state.receivedPushes().map(\.token) == [Self.token(2)])
            #expect(client.load.connections == 1)
        }
    }

    @Test func answersWithErrorsTimeoutsAndBrokenConnectionsAreReportedAndTheClientGoesOn() async throws {
        try await TestSink.withSink { sink in
            let client = HTTP1PushClient(
                endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: sink.baseURL)), maxConnections: 2)
            defer { client.shutdown() }
            sink.state.addFault(try Fault(token: Self.token(1), status: 429, reason: "TooManyRequests", times: 1))
            let refused = try await Self.push(client, token: Self.token(1))
            #expect(refused.status == 429)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("TooManyRequests"))

            sink.state.addFault(try Fault(token: Self.token(2), times: 1, connection: .close))
            await #expect(throws: HTTP1PushError.self) { _ = try await Self.push(client, token: Self.token(2)) }

            sink.state.addFault(try Fault(token: Self.token(3), times: 1, delayMilliseconds: 2_000))
            let clock = ContinuousClock()
            let started = clock.now
            await #expect(throws: HTTP1PushError(code: .timedOut, message: "no answer within 200 ms")) {
                _ = try await Self.push(client, token: Self.token(3), timeout: .milliseconds(200))
            }
            #expect(clock.now - started < .seconds(2))

            for index in 4..<10 { #expect(try await Self.push(client, token: Self.token(index)).status == 200) }
        }
    }

    @Test func aCancelledPushInFlightOrWaitingEndsAtOnceAndTheClientGoesOn() async throws {
        try await TestSink.withSink { sink in
            let client = HTTP1PushClient(
                endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: sink.baseURL)), maxConnections: 1)
            defer { client.shutdown() }
            sink.state.addFault(try Fault(token: Self.token(1), times: 1, delayMilliseconds: 5_000))
            let clock = ContinuousClock()
            let started = clock.now
            let inFlight = Task { try await Self.push(client, token: Self.token(1), timeout: .seconds(30)) }
            try await eventually("the first push holds the one connection") {
                client.load == (connections: 1, waiting: 0)
            }
            let waiting = Task { try await Self.push(client, token: Self.token(2), timeout: .seconds(30)) }
            try await eventually("the second push waits for it") { client.load == (connections: 1, waiting: 1) }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            inFlight.cancel()
            await #expect(throws: CancellationError.self) { _ = try await inFlight.value }
            #expect(clock.now - started < .seconds(3), "not the 5 s the sink waits")
            #expect(try await Self.push(client, token: Self.token(3)).status == 200)
        }
    }

    @Test func nobodyListeningFailsTheWaitingPushesAtOnce() async throws {
        // A port just freed: a sink that ran there has shut down.
        let port = try await TestSink.withSink { $0.port }
        let client = HTTP1PushClient(
            endpoint: try #require(HTTP1PushClient.Endpoint(baseURL: "http://127.0.0.1:\(port)")), maxConnections: 2)
        defer { client.shutdown() }
        let clock = ContinuousClock()
        let started = clock.now
        let codes = await withTaskGroup(of: HTTP1PushError.Code?.self) { group in
            for index in 0..<5 {
                group.addTask { () -> HTTP1PushError.Code? in
                    do {
                        _ = try await Self.push(client, token: Self.token(index))
                        return nil
                    } catch {
                        return (error as? HTTP1PushError)?.code
                    }
                }
            }
            return await group.reduce(into: [HTTP1PushError.Code?]()) { $0.append($1) }
        }
        #expect(codes == Array(repeating: .connectFailed, count: 5))
        #expect(clock.now - started < .seconds(5))
        #expect(client.load.connections == 0)
    }

    /// A host name is resolved, and the connection's socket has TCP_NODELAY and nothing else: SO_DEBUG (what
    /// `ChannelOptions.socketOption(.tcp_nodelay)` sets) is refused without CAP_NET_ADMIN, as in a container, and
    /// no connection opened there.
    @Test func aHostNameIsReachedOnASocketWithNoDelayAndNoDebugging() async throws {
        try await TestSink.withSink { sink in
            let baseURL = sink.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            let endpoint = try #require(HTTP1PushClient.Endpoint(baseURL: baseURL))
            #expect(endpoint.host == "localhost" && endpoint.address == nil)
            let client = HTTP1PushClient(endpoint: endpoint, maxConnections: 1)
            defer { client.shutdown() }
            #expect(try await Self.push(client, token: Self.token(7)).status == 200)
            let channel = try #require(client.openChannels.first)
            #expect(try await channel.getOption(ChannelOptions.tcpOption(.tcp_nodelay)) == 1)
            let debugging = ChannelOptions.Types.SocketOption(level: .socket, name: .init(rawValue: SO_DEBUG))
            #expect(try await channel.getOption(debugging) == 0)
        }
    }

    @Test func endpointsAreReadFromHTTPBaseURLsOnly() throws {
        let plain = try #require(HTTP1PushClient.Endpoint(baseURL: "http://127.0.0.1:8787"))
        #expect(plain.host == "127.0.0.1")
        #expect(plain.port == 8787)
        #expect(plain.pathPrefix == "")
        #expect(plain.hostHeader == "127.0.0.1:8787")
        let prefixed = try #require(HTTP1PushClient.Endpoint(baseURL: "HTTP://sink/apns/"))
        #expect(prefixed.port == 80)
        #expect(prefixed.pathPrefix == "/apns")
        #expect(prefixed.hostHeader == "sink")
        #expect(prefixed.address == nil, "a name")
        #expect(plain.address != nil)
        let v6 = try #require(HTTP1PushClient.Endpoint(baseURL: "http://[::1]:9000"))
        #expect(v6.host == "::1")
        #expect(v6.hostHeader == "[::1]:9000")
        #expect(HTTP1PushClient.Endpoint(baseURL: "https://api.push.apple.com") == nil)
        #expect(HTTP1PushClient.Endpoint(baseURL: "http://:80") == nil)
        #expect(HTTP1PushClient.Endpoint(baseURL: "http://host:http") == nil)
    }
}
