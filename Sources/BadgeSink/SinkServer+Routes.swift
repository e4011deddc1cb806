import Foundation
import Hummingbird

extension SinkServer {
    /// Adds the push endpoints and the inspection API to `router`.
    func addRoutes(to router: Router<SinkRequestContext>) {
        let state = self.state
        let credentials = self.credentials
        let logDeliveries = self.configuration.logDeliveries

        router.post("/3/device/{token}") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            let answer = state.record(
                provider: .apns,
                token: token,
                headers: Self.headerList(request.headers),
                body: body.readableBytesView,
                http2: context.isHTTP2,
                refusal: credentials.checkAPNs(authorization: request.headers[.authorization])
            )
            if logDeliveries {
                DeliveryLogLine.print(answer: answer, token: token, body: body.readableBytesView)
            }
            var headers = HTTPFields()
            headers[.init("apns-id")!] = request.headers[.init("apns-id")!] ?? UUID().uuidString.lowercased()
            guard !answer.isSuccess else {
                return Response(status: .ok, headers: headers)
            }
            return Self.json(answer.apnsBody, status: answer.status, headers: headers)
        }

        router.post("/v1/projects/{project}/messages:send") { request, context -> Response in
            let project = context.parameters.get("project") ?? ""
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            let token = Self.fcmToken(in: body.readableBytesView)
            let answer = state.record(
                provider: .fcm,
                token: token,
                headers: Self.headerList(request.headers),
                body: body.readableBytesView,
                http2: context.isHTTP2,
                refusal: credentials.checkFCM(authorization: request.headers[.authorization])
            )
            if logDeliveries {
                DeliveryLogLine.print(answer: answer, token: token, body: body.readableBytesView)
            }
            return Self.json(answer.fcmBody(project: project), status: answer.status)
        }

        router.get("/deliveries") { request, _ -> Response in
            let query = request.uri.queryParameters
            var token: String?
            if let value = query["token"] {
                guard !value.isEmpty else { throw SinkError.invalidQuery("`token` must not be empty") }
                token = String(value)
            }
            var after: Int?
            if let value = query["after"] {
                guard let number = Int(value) else {
                    throw SinkError.invalidQuery("`after` must be an integer seq, got \"\(value)\"")
                }
                after = number
            }
            var limit: Int?
            if let value = query["limit"] {
                guard let number = Int(value), number >= 0 else {
                    throw SinkError.invalidQuery("`limit` must be a non-negative integer, got \"\(value)\"")
                }
                limit = number
            }
            return Self.json(state.deliveriesJSON(token: token, after: after, limit: limit))
        }

        // An OAuth2 token endpoint (RFC 7523 JWT bearer grant) standing in for Google's, for FCM tests.
        router.post("/token") { request, context -> Response in
            let body = try await request.body.collect(upTo: 64 * 1024)
            switch credentials.issueToken(form: String(buffer: body)) {
            case .success(let issued):
                var writer = JSONWriter(capacity: 128)
                writer.raw("{\"access_token\":")
                writer.string(issued.token)
                writer.raw(",\"expires_in\":")
                writer.int(issued.lifetime)
                writer.raw(",\"token_type\":\"Bearer\"}")
                return Self.json(writer.bytes)
            case .failure(let error):
                var writer = JSONWriter(capacity: 128)
                writer.raw("{\"error\":")
                writer.string(error.code)
                writer.raw(",\"error_description\":")
                writer.string(error.description)
                writer.raw("}")
                return Self.json(writer.bytes, status: error.code == "invalid_client" ? 401 : 400)
            }
        }

        router.delete("/deliveries") { _, _ -> Response in
            let count = state.clear()
            return Self.json(Array("{\"deleted\":\(count)}".utf8))
        }

        router.post("/faults") { request, context -> Response in
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            let fault = try Fault(json: body.readableBytesView)
            state.addFault(fault)
            var writer = JSONWriter(capacity: 128)
            writer.raw("{\"fault\":")
            fault.writeJSON(into: &writer)
            writer.raw("}")
            return Self.json(writer.bytes)
        }

        router.get("/faults") { _, _ -> Response in
            var writer = JSONWriter(capacity: 256)
            writer.raw("{\"faults\":[")
            for (index, fault) in state.faults().enumerated() {
                if index > 0 {
                    writer.raw(",")
                }
                fault.writeJSON(into: &writer)
            }
            writer.raw("]}")
            return Self.json(writer.bytes)
        }

        router.delete("/faults") { _, _ -> Response in
            let count = state.clearFaults()
            return Self.json(Array("{\"deleted\":\(count)}".utf8))
        }

        router.get("/stats") { _, _ -> Response in
            Self.json(state.stats().json)
        }
    }

    /// A JSON response.
    static func json(_ bytes: [UInt8], status: Int = 200, headers: HTTPFields = HTTPFields()) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=UTF-8"
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    /// The request headers as (lowercased name, value) pairs.
    static func headerList(_ fields: HTTPFields) -> [(name: String, value: String)] {
        var list: [(name: String, value: String)] = []
        list.reserveCapacity(fields.count)
        for field in fields {
            list.append((field.name.canonicalName, field.value))
        }
        return list
    }

    /// `message.token` of an FCM v1 request body, or "" when the body has none.
    static func fcmToken<Bytes: Collection<UInt8>>(in body: Bytes) -> String {
        guard let envelope = try? JSONDecoder().decode(FCMEnvelope.self, from: Data(body)) else { return "" }
        return envelope.message?.token ?? ""
    }
}

/// The part of an FCM v1 request body the sink reads.
private struct FCMEnvelope: Decodable {
    struct Message: Decodable {
        var token: String?
    }

    var message: Message?
}
