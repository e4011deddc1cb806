import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A typed client of `badgepipe sink`'s test API (its OpenAPI document is served at `/openapi.json`), for
/// end-to-end tests of a pipeline written in Swift: publish events, then wait in the sink for what each device
/// shows instead of sleeping and polling.
///
/// ```swift
/// let sink = SinkClient(url: "http://127.0.0.1:8787")
/// try await sink.clear(tokens: [token])
/// // … publish a follow for the device's user …
/// let device = try await sink.waitForBadge(1, token: token, timeout: .seconds(10))
/// #expect(device.lastAlert?.title == "New follower")
/// ```
///
/// Every wait happens in the sink (`?wait=`): the call returns as soon as the condition holds. A condition still
/// unmet at the timeout throws ``SinkClientError`` with the code ``SinkClientError/Code/timeout`` and what the
/// sink had at that moment.
///
/// Requests go through `HTTPClient.shared` (async-http-client's process-wide client): nothing to shut down.
public struct SinkClient: Sendable {
    /// The sink's base URL, without a trailing slash.
    public let url: String
    /// How long a request may take beyond its wait.
    private let requestTimeout: Duration

    /// The longest wait the sink accepts (its API's bound on `wait`).
    public static let longestWait = Duration.seconds(300)

    /// A client of the sink at `url` (default: `BADGEPIPE_SINK_URL`, else `http://127.0.0.1:8787`), whose requests
    /// may take `requestTimeout` beyond their wait (an unreachable sink is reported after that long).
    public init(url: String? = nil, requestTimeout: Duration = .seconds(10)) {
        self.requestTimeout = requestTimeout
        var base = url ?? ProcessInfo.processInfo.environment["BADGEPIPE_SINK_URL"] ?? "http://127.0.0.1:8787"
        while base.hasSuffix("/") { base.removeLast() }
        self.url = base
    }

    // MARK: Devices

    /// What every device that received a push shows now.
    public func devices() async throws -> [SinkDevice] {
        let (status, body) = try await request(.GET, "/devices")
        try Self.expect(status, [200], body)
        return try Self.decode(SinkDevices.self, body).devices
    }

    /// What the device shows now; nil when it has received no push.
    public func device(_ token: String) async throws -> SinkDevice? {
        let (status, body) = try await request(.GET, "/devices/\(Self.escaped(token))")
        if status == 404 { return nil }
        try Self.expect(status, [200], body)
        return try Self.decode(SinkDevice.self, body)
    }

    /// Waits until the device's last badge is `badge` (or, with `badge` nil, until it received any push after
    /// `after`), for at most `timeout`; returns the device as it then is.
    public func waitForBadge(
        _ badge: Int?, token: String, after: Int? = nil, timeout: Duration = .seconds(10)
    ) async throws -> SinkDevice {
        var query = ["wait=\(Self.seconds(timeout))"]
        if let badge { query.append("badge=\(badge)") }
        if let after { query.append("after=\(after)") }
        let (status, body) = try await request(
            .GET, "/devices/\(Self.escaped(token))?" + query.joined(separator: "&"), timeout: timeout)
        switch status {
        case 200:
            return try Self.decode(SinkDevice.self, body)
        case 404:
            throw SinkClientError(code: .timeout, message: "no push reached \(token) within \(timeout)")
        case 412:
            let device = try? Self.decode(SinkDevice.self, body)
            throw SinkClientError(
                code: .timeout,
                message: "\(token) shows badge \(device?.badge.map(String.init) ?? "none") after \(timeout), not "
                    + "\(badge.map(String.init) ?? "a push")",
                device: device)
        default:
            try Self.expect(status, [200], body)
            throw SinkClientError(code: .unexpectedAnswer, message: "status \(status)")
        }
    }

    // MARK: Deliveries

    /// The recorded pushes that `filter` keeps, oldest first.
    public func deliveries(_ filter: SinkDeliveryFilter = SinkDeliveryFilter()) async throws -> [SinkDelivery] {
        let (status, body) = try await request(.GET, "/deliveries" + filter.query(extra: []))
        try Self.expect(status, [200], body)
        return try Self.decode(SinkDeliveries.self, body).deliveries
    }

    /// Waits until at least `count` recorded pushes match `filter`, for at most `timeout`; returns them.
    public func waitForDeliveries(
        _ count: Int, _ filter: SinkDeliveryFilter = SinkDeliveryFilter(), timeout: Duration = .seconds(10)
    ) async throws -> [SinkDelivery] {
        let path = "/deliveries" + filter.query(extra: ["wait=\(Self.seconds(timeout))", "min=\(count)"])
        let (status, body) = try await request(.GET, path, timeout: timeout)
        switch status {
        case 200:
            return try Self.decode(SinkDeliveries.self, body).deliveries
        case 412:
            let seen = (try? Self.decode(SinkDeliveries.self, body).deliveries) ?? []
            throw SinkClientError(
                code: .timeout, message: "\(seen.count) of \(count) pushes after \(timeout)", deliveries: seen)
        default:
            try Self.expect(status, [200], body)
            throw SinkClientError(code: .unexpectedAnswer, message: "status \(status)")
        }
    }

    /// Forgets the recorded pushes of `tokens` (every push when nil), so that one test does not see another's;
    /// returns how many were forgotten.
    @discardableResult
    public func clear(tokens: [String]? = nil) async throws -> Int {
        let query = tokens.map { "?" + $0.map { "token=\(Self.escaped($0))" }.joined(separator: "&") } ?? ""
        let (status, body) = try await request(.DELETE, "/deliveries" + query)
        try Self.expect(status, [200], body)
        return try Self.decode(SinkDeleted.self, body).deleted
    }

    // MARK: Faults

    /// Makes the sink answer pushes with `fault` (see ``SinkFault``) until it is used up or cleared.
    public func addFault(_ fault: SinkFault) async throws {
        let (status, body) = try await request(.POST, "/faults", body: try JSONEncoder().encode(fault))
        try Self.expect(status, [200], body)
    }

    /// Removes every fault.
    public func clearFaults() async throws {
        let (status, body) = try await request(.DELETE, "/faults")
        try Self.expect(status, [200], body)
    }

    // MARK: Plumbing

    /// `method path` on the sink: its status and body. `timeout` is the sink's wait; the request may take a little
    /// longer.
    private func request(
        _ method: HTTPMethod, _ path: String, body: Data? = nil, timeout: Duration = .zero
    ) async throws -> (Int, Data) {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let total = timeout + requestTimeout
        let limit = TimeAmount.milliseconds(
            total.components.seconds * 1000 + total.components.attoseconds / 1_000_000_000_000_000)
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: limit)
            let buffer = try await response.body.collect(upTo: Self.largestAnswer)
            return (Int(response.status.code), Data(buffer.readableBytesView))
        } catch {
            throw SinkClientError(code: .unreachable, message: "cannot reach the sink at \(url): \(error)")
        }
    }

    /// The largest answer read (the sink's whole log of pushes fits).
    static let largestAnswer = 256 << 20

    private static func expect(_ status: Int, _ expected: Set<Int>, _ body: Data) throws {
        guard !expected.contains(status) else { return }
        let message = (try? JSONDecoder().decode(SinkErrorBody.self, from: body))?.error.message
        throw SinkClientError(
            code: .unexpectedAnswer, message: "status \(status)" + (message.map { ": \($0)" } ?? ""))
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ body: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw SinkClientError(code: .unexpectedAnswer, message: "cannot read the sink's answer: \(error)")
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let clamped = min(max(duration, .zero), longestWait)
        let milliseconds =
            clamped.components.seconds * 1000 + clamped.components.attoseconds / 1_000_000_000_000_000
        return String(Double(milliseconds) / 1000)
    }

    static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryValueAllowed) ?? text
    }

    static let queryValueAllowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
}

private struct SinkDevices: Decodable { var devices: [SinkDevice] }
private struct SinkDeliveries: Decodable { var deliveries: [SinkDelivery] }
private struct SinkDeleted: Decodable { var deleted: Int }
private struct SinkErrorBody: Decodable {
    struct Inner: Decodable { var message: String }
    var error: Inner
}
