import AsyncHTTPClient
import BadgeSink
import Foundation
import SinkTestSupport

/// An HTTP answer of the sink.
struct SinkAnswer: Sendable {
    let status: Int
    /// The answer's headers, names lowercased.
    let headers: [String: String]
    let body: [UInt8]

    var text: String { String(decoding: self.body, as: UTF8.self) }

    /// The body parsed as a JSON object (empty when it is not one).
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(self.body))) as? [String: Any] ?? [:]
    }

    /// A request the test could not make, or an answer it did not expect.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}

/// What the sink's tests do with a sink: send raw requests, to its routes in process (``RouterSink``) or over a
/// socket (`RunningSink`, from `TestSink.withSink`), and read the raw answers.
protocol SinkRequests: Sendable {
    /// The sink's store.
    var state: SinkState { get }

    /// Sends one request to the sink.
    func send(_ method: String, _ path: String, body: [UInt8]?, headers: [(String, String)]) async throws -> SinkAnswer
}

extension SinkRequests {
    /// Sends a request without a body.
    func send(_ method: String, _ path: String, headers: [(String, String)] = []) async throws -> SinkAnswer {
        try await self.send(method, path, body: nil, headers: headers)
    }

    /// Sends a request with a body.
    func send(_ method: String, _ path: String, body: [UInt8]) async throws -> SinkAnswer {
        try await self.send(method, path, body: body, headers: [])
    }

    /// Sends a request whose body is `json` text, as `application/json` unless `headers` name another type.
    func send(
        _ method: String, _ path: String, json: String, headers: [(String, String)] = []
    ) async throws
        -> SinkAnswer
    {
        let typed = headers.contains { $0.0.lowercased() == "content-type" }
        return try await self.send(
            method, path, body: Array(json.utf8),
            headers: typed ? headers : headers + [("content-type", "application/json")])
    }

    /// Pushes an APNs alert with a small payload to `token`.
    func pushAPNs(_ token: String, badge: Int = 1, headers: [(String, String)] = []) async throws -> SinkAnswer {
        let payload = "{\"aps\":{\"badge\":\(badge)},\"type\":\"follow\",\"badge_version\":\(badge)}"
        return try await self.send("POST", "/3/device/\(token)", json: payload, headers: headers)
    }

    /// Pushes an FCM v1 message to `token` in project `demo`.
    func pushFCM(_ token: String) async throws -> SinkAnswer {
        let payload = "{\"message\":{\"token\":\"\(token)\",\"data\":{\"badge\":\"1\"}}}"
        return try await self.send("POST", "/v1/projects/demo/messages:send", json: payload)
    }

    /// `GET /deliveries` with an optional query string, as parsed objects.
    func deliveries(_ query: String = "") async throws -> [[String: Any]] {
        let answer = try await self.send("GET", "/deliveries\(query)")
        guard answer.status == 200, let list = answer.json["deliveries"] as? [[String: Any]] else {
            throw SinkAnswer.Failure(description: "GET /deliveries\(query) answered \(answer.status): \(answer.text)")
        }
        return list
    }

    /// Adds a fault through `POST /faults`.
    func addFault(_ json: String) async throws {
        let answer = try await self.send("POST", "/faults", json: json)
        guard answer.status == 200 else {
            throw SinkAnswer.Failure(description: "POST /faults answered \(answer.status): \(answer.text)")
        }
    }
}

extension RunningSink: SinkRequests {
    /// Sends one request to the sink over ``client``.
    func send(
        _ method: String,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)]
    ) async throws -> SinkAnswer {
        var request = HTTPClientRequest(url: self.baseURL + path)
        request.method = .init(rawValue: method)
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        if let body {
            request.body = .bytes(body)
        }
        let response = try await self.client.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 30)
        var answerHeaders: [String: String] = [:]
        for header in response.headers {
            answerHeaders[header.name.lowercased()] = header.value
        }
        return SinkAnswer(
            status: Int(response.status.code),
            headers: answerHeaders,
            body: Array(collected.readableBytesView)
        )
    }
}
