import Hummingbird

/// The static files the sink serves: the OpenAPI document of its API and the web view. Their sources are the
/// files under `Sources/BadgeSink/Assets`, embedded in Swift at build time by the EmbedSinkAssets plugin so that
/// the binary needs nothing beside it.
enum SinkAssets {
    /// One served file.
    struct Asset: Sendable {
        /// The path it is served at.
        let path: String
        /// Its file under `Sources/BadgeSink/Assets`.
        let file: String
        /// Its `Content-Type`.
        let contentType: String
        /// Its text.
        let text: String
    }

    /// Every served file.
    static let all: [Asset] = [
        Asset(
            path: "/openapi.json", file: "openapi.json", contentType: "application/json; charset=UTF-8",
            text: Self.openapiJson),
        Asset(path: "/", file: "index.html", contentType: "text/html; charset=UTF-8", text: Self.indexHtml),
        Asset(path: "/app.js", file: "app.js", contentType: "text/javascript; charset=UTF-8", text: Self.appJs),
        Asset(path: "/style.css", file: "style.css", contentType: "text/css; charset=UTF-8", text: Self.styleCss),
    ]

    /// Adds a `GET` route for each file to `router`.
    static func addRoutes(to router: Router<SinkRequestContext>) {
        for asset in Self.all {
            let body = ByteBuffer(string: asset.text)
            var headers = HTTPFields()
            headers[.contentType] = asset.contentType
            headers[.cacheControl] = "no-cache"
            let fields = headers
            router.get(RouterPath(asset.path)) { _, _ in
                Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: body))
            }
        }
    }
}
