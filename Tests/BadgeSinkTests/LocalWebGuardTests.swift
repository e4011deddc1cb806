import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SinkTestSupport
import Testing

@testable import BadgeSink

/// The sink as a local web app: a page open in the developer's browser can neither drive it (a cross-site form or
/// fetch to `/faults`) nor read it (DNS rebinding to `/deliveries`), and its page is served with a
/// Content-Security-Policy. Over a real socket.
@Suite("The sink against other sites' pages")
struct LocalWebGuardTests {
    static func request(
        _ sink: RunningSink, _ method: HTTPMethod, _ path: String, body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> (status: Int, headers: HTTPHeaders, body: String) {
        var request = HTTPClientRequest(url: sink.baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await sink.client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers, String(buffer: bytes))
    }

    @Test func otherSitesCannotDriveOrReadTheSink() async throws {
        try await TestSink.withSink { sink in
            let fault = #"{"status": 410, "reason": "Unregistered"}"#
            // A cross-site form: text/plain or form-encoded, with the attacker's Origin.
            let form = try await Self.request(
                sink, .POST, "/faults", body: fault,
                headers: [("content-type", "text/plain"), ("origin", "https://evil.example")])
            #expect(form.status == 403, "\(form.body)")
            let formEncoded = try await Self.request(
                sink, .POST, "/faults", body: "status=410",
                headers: [("content-type", "application/x-www-form-urlencoded")])
            #expect(formEncoded.status == 415, "\(formEncoded.body)")
            let nullOrigin = try await Self.request(
                sink, .POST, "/faults", body: fault,
                headers: [("content-type", "application/json"), ("origin", "null")])
            #expect(nullOrigin.status == 403)
            let deleteFromPage = try await Self.request(
                sink, .DELETE, "/deliveries", headers: [("origin", "https://evil.example")])
            #expect(deleteFromPage.status == 403)
            // Another local server's page (another port) is another site, for writes and reads alike.
            let otherPort = try await Self.request(
                sink, .POST, "/faults", body: fault,
                headers: [("content-type", "application/json"), ("origin", "http://127.0.0.1:3000")])
            #expect(otherPort.status == 403, "\(otherPort.body)")
            let read = try await Self.request(
                sink, .GET, "/deliveries", headers: [("origin", "http://localhost:3000")])
            #expect(read.status == 403 && read.body.contains("forbidden_origin"), "\(read.body)")
            #expect(sink.state.faults().isEmpty, "no fault was added")
            // DNS rebinding: the page's own name, resolved to 127.0.0.1.
            let rebound = try await Self.request(sink, .GET, "/deliveries", headers: [("host", "evil.example:8787")])
            #expect(rebound.status == 403)
            #expect(rebound.body.contains("forbidden_host"))
            let reboundPage = try await Self.request(sink, .GET, "/", headers: [("host", "127.0.0.1.evil.example")])
            #expect(reboundPage.status == 403)

            // The sink's own page and clients go on working.
            let own = try await Self.request(
                sink, .POST, "/faults", body: fault,
                headers: [("content-type", "application/json"), ("origin", sink.baseURL)])
            #expect(own.status == 200, "\(own.body)")
            let ownRead = try await Self.request(sink, .GET, "/deliveries", headers: [("origin", sink.baseURL)])
            #expect(ownRead.status == 200, "\(ownRead.body)")
            let tool = try await Self.request(
                sink, .POST, "/faults", body: fault, headers: [("content-type", "application/json; charset=utf-8")])
            #expect(tool.status == 200)
            #expect(try await Self.request(sink, .DELETE, "/faults").status == 200)
            for host in ["localhost:8787", "127.0.0.1", "[::1]:8787"] {
                #expect(
                    try await Self.request(sink, .GET, "/stats", headers: [("host", host)]).status == 200, "\(host)")
            }
            // Pushes keep coming whatever their Host (a provider client's configured name).
            let push = try await Self.request(
                sink, .POST, "/3/device/phone", body: #"{"aps":{"badge":1}}"#,
                headers: [("host", "api.push.example.com"), ("content-type", "application/json")])
            #expect(push.status == 200)

            let page = try await Self.request(sink, .GET, "/")
            #expect(page.status == 200)
            let policy = page.headers.first(name: "content-security-policy") ?? ""
            #expect(policy.contains("frame-ancestors 'none'") && policy.contains("script-src 'self'"), "\(policy)")
            #expect(page.headers.first(name: "x-content-type-options") == "nosniff")
            for asset in ["/app.js", "/style.css", "/openapi.json", "/stats"] {
                let answer = try await Self.request(sink, .GET, asset)
                #expect(answer.status == 200, "\(asset)")
                #expect(answer.headers.first(name: "x-content-type-options") == "nosniff", "\(asset)")
                #expect(answer.headers.first(name: "content-security-policy") == policy, "\(asset)")
            }
        }
    }

    @Test func aSinkOnEveryInterfaceTakesServiceNamesAndAddressesButNotDomains() {
        let guardAll = LocalWebGuard(host: "0.0.0.0", allowedHosts: ["sink.internal.example"])
        #expect(guardAll.allows(authority: "sink:8787"))
        #expect(guardAll.allows(authority: "10.1.2.3:8787"))
        #expect(guardAll.allows(authority: "sink.internal.example"))
        #expect(!guardAll.allows(authority: "evil.example:8787"))
        let guardLocal = LocalWebGuard(host: "127.0.0.1", allowedHosts: [])
        #expect(!guardLocal.allows(authority: "sink:8787"))
        #expect(guardLocal.allows(origin: "http://localhost:8787", requestAuthority: "localhost:8787"))
        #expect(!guardLocal.allows(origin: "http://localhost:3000", requestAuthority: "localhost:8787"))
        #expect(!guardLocal.allows(origin: "http://127.0.0.1:8787", requestAuthority: "localhost:8787"))
        #expect(!guardLocal.allows(origin: "file://", requestAuthority: "localhost:8787"))
        #expect(!guardLocal.allows(origin: "null", requestAuthority: "localhost:8787"))
        #expect(guardAll.allows(origin: "https://sink.internal.example", requestAuthority: "127.0.0.1:8787"))
    }
}
