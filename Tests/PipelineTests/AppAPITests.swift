import AMQPClient
import AsyncHTTPClient
import BadgeAPI
import BadgeCore
import BadgePipeClient
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import TestServices
import Testing

/// The app's API (contract section 7) against a real pipeline: the broker, a worker on a fresh database, the sink
/// and `APIServer` over real HTTP.
@Suite("The app's API", .serialized, .timeLimit(.minutes(5)))
struct AppAPITests {
    static let secret = Array("a-development-secret-of-at-least-32-bytes".utf8)
    static let audience = "com.example.app"
    static let token = "abab0000abab0000abab0000abab0000abab0000abab0000abab0000abab0000"

    /// A running API over `pipeline`'s database and exchange, and an HTTP client for it.
    struct API: Sendable {
        let base: String
        let client: HTTPClient

        func request(
            _ method: HTTPMethod, _ path: String, token: String?, body: String? = nil,
            headers extra: [(String, String)] = []
        ) async throws -> (status: Int, headers: HTTPHeaders, body: String) {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await client.execute(request, timeout: .seconds(10))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), response.headers, String(buffer: bytes))
        }

        func json(_ path: String, token: String) async throws -> JSONValue {
            let answer = try await request(.GET, path, token: token)
            #expect(answer.status == 200, "\(path): \(answer.status) \(answer.body)")
            return try JSONValue.parse(answer.body)
        }
    }

    static func withAPI(
        backend: Backend, demo: Bool = false, maxStreams: Int = APIConfiguration.defaultMaxStreams,
        keepAlive: Duration = CountsWatcher.defaultKeepAlive, _ body: @Sendable (Pipeline, API) async throws -> Void
    ) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            var logger = Logger(label: "api-test")
            logger.logLevel = .warning
            let reads = try #require(pipeline.store as? any AppReads)
            let verifier = try await TokenVerifier(keys: [.hs256(secret: secret, kid: nil)], audience: audience)
            let watcher = CountsWatcher(reads: reads, policy: .unseen, keepAlive: keepAlive, logger: logger)
            var configuration = APIConfiguration(
                host: "127.0.0.1", port: 0, badgePolicy: .unseen, amqp: try AMQPConfigurationForTests.make(),
                exchange: pipeline.topology.exchange)
            configuration.maxStreamsPerUser = 3
            configuration.demo = demo
            configuration.maxStreams = maxStreams
            let (ports, portContinuation) = AsyncStream<Int>.makeStream()
            let server = APIServer(
                configuration: configuration, reads: reads, verifier: verifier, watcher: watcher, logger: logger,
                metrics: PrometheusCollectorRegistry()
            ) { port in portContinuation.yield(port) }
            let group = ServiceGroup(services: [watcher, server], logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                var iterator = ports.makeAsyncIterator()
                let port = try #require(await iterator.next())
                let client = HTTPClient(eventLoopGroupProvider: .singleton)
                // The API stops first: its streams end with it, and the client then has nothing in flight.
                do {
                    try await body(pipeline, API(base: "http://127.0.0.1:\(port)", client: client))
                } catch {
                    await group.triggerGracefulShutdown()
                    try? await tasks.waitForAll()
                    try? await client.shutdown()
                    throw error
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                try await client.shutdown()
            }
        }
    }

    static func token(
        for user: String, lifetime: TimeInterval = 600, secret: [UInt8] = secret, audience: String? = audience
    )
        async throws -> String
    {
        try await DevelopmentToken.sign(user: user, secret: secret, lifetime: lifetime, audience: audience)
    }

    static func follow(_ user: String, id: String, second: Int) -> JSONValue {
        [
            "id": .string(id), "type": "follow", "recipient": .string(user),
            "occurred_at": .string("2026-11-21T10:00:\(String(format: "%02d", second))Z"),
            "actor": ["id": "u-bob", "name": "Bob"],
        ]
    }

    /// Counts with an ETag and 304; the list newest first with the event's fields; reads and writes through the
    /// broker; an `Idempotency-Key` replayed takes effect once; bad bodies are refused with nothing published.
    @Test(arguments: Backend.allCases)
    func countsListAndWrites(backend: Backend) async throws {
        try await Self.withAPI(backend: backend) { pipeline, api in
            let user = "u-app"
            let token = try await Self.token(for: user)
            // A device registered through the API, then three follows from a producer.
            let registered = try await api.request(
                .POST, "/v1/me/devices", token: token,
                body: #"{"token": "\#(Self.token)", "provider": "apns", "topic": "com.example.test"}"#)
            #expect(registered.status == 202, "\(registered.body)")
            for second in 1...3 { try await pipeline.publish(Self.follow(user, id: "api-f\(second)", second: second)) }
            try await pipeline.waitUntilQuiet(outboxEmpty: true)

            let counts = try await api.request(.GET, "/v1/me/counts", token: token)
            #expect(counts.status == 200)
            let parsed = try JSONValue.parse(counts.body)
            #expect(parsed["unread_notifications"]?.int64Value == 3)
            #expect(parsed["badge"]?.int64Value == 3)
            let version = try #require(parsed["badge_version"]?.int64Value)
            #expect(counts.headers.first(name: "ETag") == "\"\(version)\"")
            // The icon's badge is the API's: the last push carries the same counts at the same version.
            let last = try #require(pipeline.acceptedPayloads(token: Self.token).last)
            #expect(last["badge_version"]?.int64Value == version)
            #expect(last["aps"]?["badge"]?.int64Value == 3)
            let notModified = try await api.request(
                .GET, "/v1/me/counts", token: token, headers: [("If-None-Match", "\"\(version)\"")])
            #expect(notModified.status == 304)

            let page = try await api.json("/v1/me/notifications?limit=2", token: token)
            let items = try #require(page["notifications"]?.arrayValue)
            #expect(items.compactMap { $0["id"]?.stringValue } == ["api-f3", "api-f2"])
            #expect(items.first?["type"]?.stringValue == "follow")
            #expect(items.first?["actor"]?["name"]?.stringValue == "Bob")
            #expect(items.first?["read"]?.boolValue == false)
            let next = try #require(page["next"]?.stringValue)
            let rest = try await api.json("/v1/me/notifications?limit=2&before=\(next)", token: token)
            #expect(rest["notifications"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["api-f1"])
            #expect(rest["next"]?.isNull == true)

            // Read two, twice with the same Idempotency-Key: one event.
            let read = #"{"ids": ["api-f1", "api-f2"]}"#
            let first = try await api.request(
                .POST, "/v1/me/notifications/read", token: token, body: read, headers: [("Idempotency-Key", "k-1")])
            let again = try await api.request(
                .POST, "/v1/me/notifications/read", token: token, body: read, headers: [("Idempotency-Key", "k-1")])
            #expect(first.status == 202 && again.status == 202)
            #expect(first.body == again.body, "the same event id")
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            let after = try await api.json("/v1/me/counts", token: token)
            #expect(after["unread_notifications"]?.int64Value == 1)
            #expect(after["badge_version"]?.int64Value == version + 1, "one read event, one version")
            #expect(pipeline.lastBadge(token: Self.token) == 1)

            // Refused with the reason, nothing published.
            let missing = try await api.request(.POST, "/v1/me/notifications/read", token: token, body: "{}")
            #expect(missing.status == 400, "\(missing.body)")
            let tooMany = try await api.request(
                .POST, "/v1/me/notifications/read", token: token,
                body: #"{"ids": [\#((0...500).map { "\"n\($0)\"" }.joined(separator: ","))]}"#)
            #expect(tooMany.status == 400, "\(tooMany.body)")
            let badTime = try await api.request(
                .POST, "/v1/me/notifications/read-all", token: token, body: #"{"until": "yesterday"}"#)
            #expect(badTime.status == 400, "\(badTime.body)")
            let badLimit = try await api.request(.GET, "/v1/me/notifications?limit=1000", token: token)
            #expect(badLimit.status == 400)
            let badCursor = try await api.request(.GET, "/v1/me/notifications?before=%%%", token: token)
            #expect(badCursor.status == 400)
            try await pipeline.waitUntilQuiet()
            #expect(try await api.json("/v1/me/counts", token: token)["badge_version"]?.int64Value == version + 1)

            // Another user sees nothing of this one's.
            let other = try await api.json("/v1/me/counts", token: try await Self.token(for: "u-other"))
            #expect(other["unread_notifications"]?.int64Value == 0)
            #expect(try await api.json("/openapi.json", token: token)["openapi"]?.stringValue == "3.1.0")
        }
    }

    /// Guarantee 11 at the door: a missing, malformed, expired, wrongly signed, wrong-audience or `alg: none`
    /// token gets `401` with `WWW-Authenticate`, on every route.
    @Test func badTokensAreRefused() async throws {
        try await Self.withAPI(backend: .sqlite) { _, api in
            let header = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64URL
            let payload = Data(#"{"sub":"u-app","exp":4102444800,"aud":"com.example.app"}"#.utf8).base64URL
            let tokens: [(String, String?)] = [
                ("missing", nil),
                ("malformed", "not-a-jwt"),
                ("alg none", "\(header).\(payload)."),
                ("expired", try await Self.token(for: "u-app", lifetime: -120)),
                (
                    "another key",
                    try await Self.token(for: "u-app", secret: Array("another-secret-of-at-least-32-bytes!!".utf8))
                ),
                ("wrong audience", try await Self.token(for: "u-app", audience: "com.example.other")),
                ("no audience", try await Self.token(for: "u-app", audience: nil)),
            ]
            for (what, token) in tokens {
                for (method, path) in [
                    (HTTPMethod.GET, "/v1/me/counts"), (.GET, "/v1/me/notifications"), (.GET, "/v1/me/stream"),
                    (.POST, "/v1/me/notifications/read-all"), (.DELETE, "/v1/me/devices/abc"),
                ] {
                    let answer = try await api.request(method, path, token: token, body: method == .POST ? "{}" : nil)
                    #expect(answer.status == 401, "\(what) on \(path): \(answer.status)")
                    #expect(answer.headers.first(name: "WWW-Authenticate") == "Bearer error=\"invalid_token\"")
                }
            }
            // Every route of the OpenAPI document is served: each /v1 one answers 401 without a token, not 404.
            let document = try JSONValue.parse(try await api.request(.GET, "/openapi.json", token: nil).body)
            let paths = try #require(document["paths"]?.objectMembers)
            #expect(paths.count >= 14)
            for (path, operations) in paths where path.hasPrefix("/v1/") {
                let concrete = path.replacingOccurrences(of: "{conversation_id}", with: "c-1")
                    .replacingOccurrences(of: "{token}", with: "abc")
                for (method, _) in operations.objectMembers ?? [] {
                    let answer = try await api.request(
                        HTTPMethod(rawValue: method.uppercased()), concrete, token: nil,
                        body: method == "get" || method == "delete" ? nil : "{}")
                    #expect(answer.status == 401, "\(method) \(path): \(answer.status)")
                }
            }
            // Within the leeway, an expired token still passes.
            let recent = try await Self.token(for: "u-app", lifetime: -30)
            #expect(try await api.request(.GET, "/v1/me/counts", token: recent).status == 200)
        }
    }

    /// The stream: the current counts first, then every change in version order within a second, a
    /// `notification` event for each new notification; each `counts` event's counts are those of the push built
    /// at its version (guarantee 9), and a reconnect with `Last-Event-ID` gets nothing older.
    @Test(arguments: Backend.allCases)
    func theStreamFollowsEveryChange(backend: Backend) async throws {
        try await Self.withAPI(backend: backend) { pipeline, api in
            let user = "u-live"
            let token = try await Self.token(for: user)
            try await pipeline.publish(RobustnessTests.register(user, token: Self.token, id: "live-d1"))
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            let events = EventCollector()
            let reader = Task { try await Self.readStream(api, token: token, into: events) }
            defer { reader.cancel() }
            try await events.wait(for: 1)
            let clock = ContinuousClock()
            let started = clock.now
            try await pipeline.publish(Self.follow(user, id: "live-f1", second: 1))
            try await events.wait { $0.contains { $0.name == "counts" && $0.id == "1" } }
            let latency = clock.now - started
            #expect(latency < .seconds(2), "the change reached the stream after \(latency)")
            for second in 2...6 { try await pipeline.publish(Self.follow(user, id: "live-f\(second)", second: second)) }
            try await pipeline.publish(
                [
                    "id": "live-r1", "type": "notifications_opened", "recipient": .string(user),
                    "occurred_at": "2026-11-21T10:00:30Z",
                ])
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            try await events.wait { $0.contains { $0.name == "counts" && $0.id == "7" } }
            let received = await events.all
            let counts = received.filter { $0.name == "counts" }
            let versions = counts.compactMap { $0.id.flatMap { Int64($0) } }
            #expect(versions == versions.sorted() && Set(versions).count == versions.count, "\(versions)")
            #expect(versions.last == 7)
            let notifications = received.filter { $0.name == "notification" }.compactMap {
                (try? JSONValue.parse($0.data))?["id"]?.stringValue
            }
            #expect(Set(notifications) == Set((1...6).map { "live-f\($0)" }), "\(notifications)")
            #expect(notifications.count == 6, "each new notification is announced once: \(notifications)")
            // Guarantee 9: at every version both show, the stream's counts are the push's.
            let pushes = pipeline.acceptedPayloads(token: Self.token)
            var compared = 0
            for event in counts {
                let data = try JSONValue.parse(event.data)
                guard let version = data["badge_version"]?.int64Value,
                    let push = pushes.first(where: { $0["badge_version"]?.int64Value == version })
                else { continue }
                compared += 1
                #expect(push["aps"]?["badge"]?.int64Value == data["badge"]?.int64Value, "badge at \(version)")
                #expect(push["counts"] == data.withoutBadge, "counts at \(version)")
            }
            #expect(compared >= 2, "the stream and the pushes share versions")

            // Reconnecting with the last id: nothing older is sent again.
            let again = EventCollector()
            let second = Task {
                try await Self.readStream(api, token: token, lastEventID: "7", into: again)
            }
            defer { second.cancel() }
            try await pipeline.publish(Self.follow(user, id: "live-f7", second: 7))
            try await again.wait { $0.contains { $0.name == "counts" } }
            #expect(await again.all.filter { $0.name == "counts" }.compactMap { $0.id } == ["8"])
        }
    }

    /// The Swift client: it registers a device, reads the list, marks read, and its `counts()` yields the current
    /// counts and then each change, never a lower version.
    @Test func theSwiftClientFollowsTheCounts() async throws {
        try await Self.withAPI(backend: .sqlite) { pipeline, api in
            let user = "u-client"
            let token = try await Self.token(for: user)
            let client = BadgePipeClient(url: URL(string: api.base)!) { token }
            try await client.register(token: Self.token, provider: "apns", topic: "com.example.test")
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            let seen = CountsCollector()
            let reader = Task {
                for try await counts in client.counts() { await seen.add(counts) }
            }
            defer { reader.cancel() }
            try await seen.wait { $0.count >= 1 }
            try await pipeline.publish(Self.follow(user, id: "cl-f1", second: 1))
            try await pipeline.publish(Self.follow(user, id: "cl-f2", second: 2))
            try await seen.wait { $0.last?.badge == 2 }
            let page = try await client.notifications(limit: 10)
            #expect(page.notifications.map(\.id) == ["cl-f2", "cl-f1"])
            #expect(page.notifications.first?.actor?.name == "Bob")
            #expect(page.counts.badge == 2)
            try await client.markRead(["cl-f1"], idempotencyKey: "read-1")
            try await seen.wait { $0.last?.badge == 1 }
            let versions = await seen.all.map(\.badgeVersion)
            #expect(versions == versions.sorted() && Set(versions).count == versions.count, "\(versions)")
            #expect(try await client.currentCounts().badge == 1)
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            #expect(pipeline.lastBadge(token: Self.token) == 1, "the icon agrees with the bell")
        }
    }

    /// `--demo` serves the demo app's page, script and stylesheet with a policy that allows no inline code and no
    /// framing; without it there is no `/demo`. `/metrics` answers in Prometheus's format.
    @Test func theDemoPageAndMetrics() async throws {
        try await Self.withAPI(backend: .sqlite, demo: true) { _, api in
            for (path, type) in [
                ("/demo", "text/html"), ("/demo/app.js", "text/javascript"), ("/demo/app.css", "text/css"),
            ] {
                let answer = try await api.request(.GET, path, token: nil)
                #expect(answer.status == 200, "\(path)")
                #expect(answer.headers["Content-Type"].first?.hasPrefix(type) == true, "\(path)")
                let policy = answer.headers["Content-Security-Policy"].first ?? ""
                #expect(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"), "\(path)")
                #expect(!policy.contains("unsafe-inline"))
                #expect(answer.headers["X-Content-Type-Options"].first == "nosniff")
            }
            let page = try await api.request(.GET, "/demo", token: nil).body
            #expect(page.contains("For development") && !page.contains("<script>"))
            let metrics = try await api.request(.GET, "/metrics", token: nil)
            #expect(metrics.status == 200)
        }
        try await Self.withAPI(backend: .sqlite) { _, api in
            let status = try await api.request(.GET, "/demo", token: nil).status
            #expect(status == 404)
        }
    }

    /// Open streams are bounded per user (`429`) and per instance (`503`), with the error body.
    @Test func streamsAreBoundedPerUserAndPerInstance() async throws {
        try await Self.withAPI(backend: .sqlite, maxStreams: 5) { _, api in
            let (alice, bob) = (try await Self.token(for: "u-limit-a"), try await Self.token(for: "u-limit-b"))
            var readers: [Task<Void, any Error>] = []
            defer { for reader in readers { reader.cancel() } }
            func open(_ token: String) async throws {
                let events = EventCollector()
                readers.append(Task { try await Self.readStream(api, token: token, into: events) })
                try await events.wait(for: 1)
            }
            for _ in 0..<3 { try await open(alice) }
            let perUser = try await api.request(.GET, "/v1/me/stream", token: alice)
            #expect(perUser.status == 429, "\(perUser.body)")
            #expect(perUser.body.contains("too_many_streams"))
            for _ in 0..<2 { try await open(bob) }
            let perInstance = try await api.request(.GET, "/v1/me/stream", token: bob)
            #expect(perInstance.status == 503, "\(perInstance.body)")
        }
    }

    /// Idle streams get a keep-alive comment every ``CountsWatcher/keepAlive``, and a stream whose client left
    /// gives its slot back at the next one: with the user's three slots taken, the three clients leave and a
    /// fourth stream opens within two keep-alives.
    @Test func keepAlivesReachIdleStreamsAndFreeTheSlotsOfClientsThatLeft() async throws {
        try await Self.withAPI(backend: .sqlite, keepAlive: .milliseconds(300)) { _, api in
            let token = try await Self.token(for: "u-idle")
            var readers: [Task<Void, any Error>] = []
            var collectors: [EventCollector] = []
            for _ in 0..<3 {
                let events = EventCollector()
                collectors.append(events)
                readers.append(Task { try await Self.readStream(api, token: token, into: events) })
                try await events.wait(for: 1)
            }
            for events in collectors {
                try await events.wait { $0.filter { $0.name == ": keep-alive" }.count >= 2 }
            }
            #expect(try await api.request(.GET, "/v1/me/stream", token: token).status == 429)
            for reader in readers { reader.cancel() }
            let clock = ContinuousClock()
            let left = clock.now
            let events = EventCollector()
            var status = 0
            while clock.now - left < .seconds(5) {
                // The head is enough: a refused stream answers 429, one that opens 200 (and ends when dropped).
                let probe = HTTPClientRequest(url: api.base + "/v1/me/stream?access_token=\(token)")
                status = Int(try await api.client.execute(probe, timeout: .seconds(5)).status.code)
                if status != 429 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let freed = clock.now - left
            #expect(status == 200 && freed < .seconds(2), "the slots were still taken \(freed) after the clients left")
            let fourth = Task { try await Self.readStream(api, token: token, into: events) }
            defer { fourth.cancel() }
            try await events.wait { $0.contains { $0.name == "counts" } }
        }
    }

    /// A write while the broker is stopped answers `503` (nothing published) within the confirm timeout, and
    /// writes work again once the broker is back.
    @Test func writesAnswer503WhileTheBrokerIsStopped() async throws {
        try await Self.withAPI(backend: .sqlite) { pipeline, api in
            let token = try await Self.token(for: "u-broker")
            let first = try await api.request(.POST, "/v1/me/notifications/opened", token: token, body: "{}")
            #expect(first.status == 202, "\(first.body)")
            try runRabbitmqctl("stop_app")
            var restarted = false
            defer { if !restarted { try? runRabbitmqctl("start_app") } }
            let clock = ContinuousClock()
            let start = clock.now
            let refused = try await api.request(
                .POST, "/v1/me/notifications/opened", token: token, body: "{}",
                headers: [("Idempotency-Key", "while-stopped")])
            let took = clock.now - start
            #expect(refused.status == 503, "\(refused.body)")
            #expect(refused.body.contains("not_published"), "\(refused.body)")
            #expect(took < .seconds(8), "the 503 took \(took)")
            // Reads do not need the broker.
            #expect(try await api.request(.GET, "/v1/me/counts", token: token).status == 200)
            try runRabbitmqctl("start_app")
            restarted = true
            try await eventually(
                "the write accepted after the broker came back", timeout: .seconds(60), every: .milliseconds(500)
            ) {
                try await api.request(
                    .POST, "/v1/me/notifications/opened", token: token, body: "{}",
                    headers: [("Idempotency-Key", "while-stopped")]
                ).status == 202
            }
        }
    }

    /// Paging the list while 1,000 notifications arrive (newer ones, and late ones among those already there): the
    /// pages, followed by their cursors, neither repeat nor skip one of those that were there, and stay in order.
    @Test(arguments: Backend.allCases)
    func cursorsNeitherRepeatNorSkipWhileNotificationsArrive(backend: Backend) async throws {
        try await Self.withAPI(backend: backend) { pipeline, api in
            let user = "u-pages"
            let token = try await Self.token(for: user)
            func follow(_ id: String, at microseconds: Int64) -> JSONValue {
                [
                    "id": .string(id), "type": "follow", "recipient": .string(user),
                    "occurred_at": .string(Timestamp(microsecondsSinceEpoch: microseconds).rfc3339),
                    "actor": ["id": .string("a-\(id)"), "name": "Fan"],
                ]
            }
            let base = Timestamp.now().microsecondsSinceEpoch - 3_600_000_000
            // 150 there before paging starts, some sharing an instant (the id breaks the tie).
            let before = (0..<150).map { follow("old-\(String(format: "%03d", $0))", at: base + Int64($0 / 2) * 1_000) }
            for event in before { try await pipeline.publish(event) }
            try await pipeline.waitUntilQuiet()
            // 1,000 arrive while the pages are read: half newer than everything, half late (their instants among
            // the old ones', so some sort after the cursor and show on a later page, and none may repeat).
            let arrivals = Task {
                for index in 0..<1_000 {
                    if index.isMultiple(of: 2) {
                        try await pipeline.publish(follow("new-\(index)", at: base + 10_000_000 + Int64(index) * 1_000))
                    } else {
                        try await pipeline.publish(follow("late-\(index)", at: base + Int64(index % 75) * 1_000))
                    }
                }
            }
            var seen: [String] = []
            var positions: [(Int64, String)] = []
            var cursor: String?
            var pages = 0
            repeat {
                let path = "/v1/me/notifications?limit=7" + (cursor.map { "&before=\($0)" } ?? "")
                let page = try await api.json(path, token: token)
                for item in page["notifications"]?.arrayValue ?? [] {
                    let id = item["id"]?.stringValue ?? ""
                    let at = Timestamp.parse(item["occurred_at"]?.stringValue ?? "")?.microsecondsSinceEpoch ?? 0
                    seen.append(id)
                    positions.append((at, id))
                }
                cursor = page["next"]?.stringValue
                pages += 1
                try await Task.sleep(for: .milliseconds(100))
            } while cursor != nil && pages < 1_000
            try await arrivals.value
            try await pipeline.waitUntilQuiet()
            #expect(Set(seen).count == seen.count, "a page repeated a notification")
            let ordered = zip(positions, positions.dropFirst()).allSatisfy {
                $0.0 > $1.0 || ($0.0 == $1.0 && $0.1 > $1.1)
            }
            #expect(ordered, "the pages go newest first")
            let old = Set(before.compactMap { $0["id"]?.stringValue })
            #expect(old.isSubset(of: Set(seen)), "missing: \(old.subtracting(seen).sorted().prefix(5))")
            let newDuringPaging = seen.filter { !$0.hasPrefix("old-") }.count
            let stored = try await api.json("/v1/me/counts", token: token)["unread_notifications"]?.int64Value
            #expect(stored == 1_150)
            print("paging (\(backend)): \(pages) pages, \(seen.count) notifications, \(newDuringPaging) of them new")
        }
    }

    actor CountsCollector {
        var all: [BadgeCounts] = []
        func add(_ counts: BadgeCounts) { all.append(counts) }
        func wait(timeout: Duration = .seconds(10), until done: @Sendable ([BadgeCounts]) -> Bool) async throws {
            do {
                try await eventually("the client's counts", timeout: timeout, every: .milliseconds(20)) { done(all) }
            } catch is EventuallyError {
                Issue.record("the client's counts did not get there: \(all.map(\.badge))")
            }
        }
    }

    /// One server-sent event.
    struct StreamEvent: Sendable {
        var name: String
        var id: String?
        var data: String
    }

    actor EventCollector {
        var all: [StreamEvent] = []
        func add(_ event: StreamEvent) { all.append(event) }

        func wait(for count: Int) async throws {
            try await wait { $0.count >= count }
        }

        func wait(timeout: Duration = .seconds(10), until done: @Sendable ([StreamEvent]) -> Bool) async throws {
            do {
                try await eventually("the stream's events", timeout: timeout, every: .milliseconds(20)) { done(all) }
            } catch is EventuallyError {
                Issue.record(
                    "the stream did not show it within \(timeout): \(all.map { "\($0.name)#\($0.id ?? "")" })")
            }
        }
    }

    /// Reads `/v1/me/stream` (the token in the query, as a browser's `EventSource` sends it) into `events`.
    static func readStream(
        _ api: API, token: String, lastEventID: String? = nil, into events: EventCollector
    ) async throws {
        var request = HTTPClientRequest(url: api.base + "/v1/me/stream?access_token=\(token)")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await api.client.execute(request, timeout: .seconds(120))
        #expect(response.status == .ok)
        var pending = ""
        for try await chunk in response.body {
            pending += String(buffer: chunk)
            while let end = pending.range(of: "\n\n") {
                let block = pending[..<end.lowerBound]
                pending.removeSubrange(..<end.upperBound)
                var event = StreamEvent(name: "message", id: nil, data: "")
                var isEvent = false
                for line in block.split(separator: "\n") {
                    if line.hasPrefix(": ") {
                        // A comment (the keep-alive), kept as an event named by its text.
                        event.name = String(line)
                        isEvent = true
                    } else if line.hasPrefix("event: ") {
                        event.name = String(line.dropFirst(7))
                        isEvent = true
                    } else if line.hasPrefix("id: ") {
                        event.id = String(line.dropFirst(4))
                    } else if line.hasPrefix("data: ") {
                        event.data = String(line.dropFirst(6))
                    }
                }
                if isEvent { await events.add(event) }
            }
        }
    }
}

extension JSONValue {
    /// A `counts` object without its `badge` and `badge_version` (the push's `counts`).
    var withoutBadge: JSONValue? {
        guard let members = objectMembers else { return nil }
        return .object(members.filter { $0.key != "badge" && $0.key != "badge_version" })
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

enum AMQPConfigurationForTests {
    static func make() throws -> AMQPConfiguration { try AMQPConfiguration(url: Pipeline.amqpURL) }
}

/// `rabbitmqctl` failed.
struct RabbitmqctlFailed: Error, CustomStringConvertible {
    let description: String
}

/// Runs `rabbitmqctl` on the test broker's node.
func runRabbitmqctl(_ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", TestServices.rabbitmqctl + " " + arguments.joined(separator: " ")]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw RabbitmqctlFailed(
            description: "rabbitmqctl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
}
