import Foundation
import Hummingbird
import Logging
import Prometheus
import Testing

@testable import BadgeSink

@Suite("The OpenAPI document")
struct OpenAPITests {
    static func document() throws -> OpenAPIDocument { try OpenAPIDocument(text: SinkAssets.openapiJson) }

    /// The directory of the asset sources.
    static let assetsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/BadgeSink/Assets")

    @Test("every file under Assets is served, embedded as it is on disk")
    func assetsEmbedded() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.assetsDirectory.path).sorted()
        #expect(files == SinkAssets.all.map(\.file).sorted())
        for asset in SinkAssets.all {
            let text = try String(contentsOf: Self.assetsDirectory.appendingPathComponent(asset.file), encoding: .utf8)
            #expect(text == asset.text, "\(asset.file) differs from its embedded copy")
        }
    }

    @Test("every route of the sink is in the document, and every operation of the document is a route")
    func routesMatch() throws {
        let document = try Self.document()
        let server = try SinkServer(
            configuration: SinkConfiguration(), logger: Logger(label: "openapi-tests"),
            metrics: PrometheusCollectorRegistry())
        let routes = Set(
            server.makeRouter().routes.map { route in
                // Hummingbird writes a capture as {name} or :name; the document as {name}.
                let path = route.path.description.split(separator: "/", omittingEmptySubsequences: false).map {
                    $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0)
                }.joined(separator: "/")
                return "\(route.method.rawValue) \(path)"
            })
        #expect(routes.subtracting(document.operations).isEmpty, "not in the document")
        #expect(document.operations.subtracting(routes).isEmpty, "in the document, not served")
        #expect(routes.count >= 18)
    }

    @Test("the schema checker finds what does not conform")
    func checkerFails() throws {
        let document = try Self.document()
        let device = ["$ref": "#/components/schemas/Device"]
        #expect(!document.problems(["token": "t"], device).isEmpty)
        let stats: [String: Any] = [
            "received": 1, "by_status": ["200": true], "dropped": 0, "kept_bytes": 0, "dropped_bytes": 0,
        ]
        #expect(
            document.problems(stats, ["$ref": "#/components/schemas/Stats"]) == ["$.by_status.200: true is not integer"]
        )
        let fault: [String: Any] = [
            "token": NSNull(), "status": NSNull(), "reason": NSNull(), "times": NSNull(), "rate": NSNull(),
            "delay_ms": 5, "connection": "reset",
        ]
        #expect(document.problems(fault, ["$ref": "#/components/schemas/Fault"]).count == 1)
        #expect(document.response("GET", "/devices/{token}", status: 500) == nil)
        #expect(document.response("POST", "/3/device/{token}", status: 599) != nil)
    }

    @Test("the sink's answers are documented: each status, content type and body (its schema)")
    func answersConform() async throws {
        let document = try Self.document()
        var configuration = SinkConfiguration()
        configuration.maxRequestBytes = 8192
        try await RouterSink.withSink(configuration: configuration) { sink in
            var checked = 0
            func check(_ method: String, _ route: String, _ path: String, body: String? = nil) async throws {
                // JSON bodies say so, as every client of the inspection API must; the token endpoint takes a form.
                let requestType = route == "/token" ? "application/x-www-form-urlencoded" : "application/json"
                let answer = try await sink.send(
                    method, path, body: body.map { Array($0.utf8) },
                    headers: body == nil ? [] : [("content-type", requestType)])
                let response = try #require(
                    document.response(method, route, status: answer.status),
                    "\(method) \(path) answered \(answer.status), not documented for \(route): \(answer.text)")
                checked += 1
                let content = response["content"] as? [String: Any] ?? [:]
                guard !content.isEmpty else {
                    #expect(answer.body.isEmpty, "\(method) \(path) \(answer.status) has an undocumented body")
                    return
                }
                let type = try #require(answer.headers["content-type"], "\(method) \(path): no content type")
                let media = try #require(
                    content.first { type.hasPrefix($0.key) }?.value as? [String: Any],
                    "\(method) \(path) \(answer.status): \(type) not documented")
                guard type.hasPrefix("application/json"), let schema = media["schema"] as? [String: Any] else { return }
                let value = try JSONSerialization.jsonObject(with: Data(answer.body), options: .fragmentsAllowed)
                let problems = document.problems(value, schema)
                #expect(problems.isEmpty, "\(method) \(path) \(answer.status): \(problems)")
                if let headers = response["headers"] as? [String: Any], answer.headers["sink-wait"] != nil {
                    #expect(headers["Sink-Wait"] != nil, "\(method) \(path): Sink-Wait not documented")
                }
            }
            let alert =
                #"{"aps":{"alert":{"title":"T","body":"B"},"badge":2,"thread-id":"x"},"type":"comment","badge_version":1}"#
            try await check("POST", "/3/device/{token}", "/3/device/phone-1", body: alert)
            try await check(
                "POST", "/sandbox/3/device/{token}", "/sandbox/3/device/phone-2", body: #"{"aps":{"badge":0}}"#)
            try await check("POST", "/3/device/{token}", "/3/device/phone-1", body: "")
            try await check("POST", "/3/device/{token}", "/3/device/phone-1", body: String(repeating: "x", count: 5000))
            try await check("POST", "/3/device/{token}", "/3/device/phone-1", body: String(repeating: "x", count: 9000))
            let fcm = #"{"message":{"token":"fcm-1","data":{"badge":"1"}}}"#
            try await check(
                "POST", "/v1/projects/{project}/messages:send", "/v1/projects/demo/messages:send", body: fcm)
            try await check(
                "POST", "/v1/projects/{project}/messages:send", "/v1/projects/demo/messages:send", body: "{}")
            try await check("POST", "/token", "/token", body: "grant_type=x")
            try await check("POST", "/faults", "/faults", body: #"{"token":"gone","status":410}"#)
            try await check("POST", "/faults", "/faults", body: #"{"token":"slow","delay_ms":1,"times":1}"#)
            try await check("POST", "/faults", "/faults", body: #"{"status":200}"#)
            try await check("GET", "/faults", "/faults")
            try await check("POST", "/3/device/{token}", "/3/device/gone", body: alert)
            try await check(
                "POST", "/v1/projects/{project}/messages:send", "/v1/projects/demo/messages:send",
                body: #"{"message":{"token":"gone"}}"#)
            try await check("POST", "/3/device/{token}", "/3/device/slow", body: alert)
            try await check("GET", "/deliveries", "/deliveries")
            try await check("GET", "/deliveries", "/deliveries?token=phone-1&kind=alert&status=200&type=comment&text=t")
            try await check("GET", "/deliveries", "/deliveries?min=1&wait=1")
            try await check("GET", "/deliveries", "/deliveries?min=99&wait=0.05")
            try await check("GET", "/deliveries", "/deliveries?kind=loud")
            try await check("GET", "/devices", "/devices")
            try await check("GET", "/devices/{token}", "/devices/phone-1")
            try await check("GET", "/devices/{token}", "/devices/phone-1?badge=2&wait=1")
            try await check("GET", "/devices/{token}", "/devices/phone-1?badge=5&wait=0.05")
            try await check("GET", "/devices/{token}", "/devices/fcm-1")
            try await check("GET", "/devices/{token}", "/devices/nobody")
            try await check("GET", "/devices/{token}", "/devices/nobody?wait=0.05")
            try await check("GET", "/devices/{token}", "/devices/phone-1?wait=never")
            try await check("GET", "/stats", "/stats")
            try await check("GET", "/openapi.json", "/openapi.json")
            try await check("DELETE", "/faults", "/faults")
            try await check("DELETE", "/deliveries", "/deliveries?token=phone-2")
            try await check("DELETE", "/deliveries", "/deliveries?token=")
            try await check("DELETE", "/deliveries", "/deliveries")
            #expect(checked == 34)
        }
    }
}
