import BadgeWire
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
            let check = credentials.checkAPNs(
                authorization: request.headers[.authorization], topic: request.headers[.init("apns-topic")!])
            let answer = Self.receive(
                .apns, token: token, body: body, request: request, context: context, check: check, into: state,
                log: logDeliveries)
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
            let check = credentials.checkFCM(authorization: request.headers[.authorization], project: project)
            let answer = Self.receive(
                .fcm, token: token, body: body, request: request, context: context, check: check, into: state,
                log: logDeliveries)
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
            return Self.json(state.receivedPushesJSON(token: token, after: after, limit: limit))
        }

        // An OAuth2 token endpoint (RFC 7523 JWT bearer grant) standing in for Google's, for FCM tests.
        router.post("/token") { request, context -> Response in
            let body = try await request.body.collect(upTo: 64 * 1024)
            switch credentials.issueToken(form: String(buffer: body)) {
            case .success(let issued):
                let answer = SinkAnswers.IssuedToken(accessToken: issued.token, expiresIn: issued.lifetime)
                return try answer.response(from: request, context: context)
            case .failure(let error):
                let answer = SinkAnswers.TokenError(error: error.code, errorDescription: error.description)
                let status: HTTPResponse.Status = error.code == "invalid_client" ? .unauthorized : .badRequest
                return try EditedResponse(status: status, response: answer).response(from: request, context: context)
            }
        }

        router.delete("/deliveries") { _, _ in
            SinkAnswers.Deleted(deleted: state.clear())
        }

        router.post("/faults") { request, context in
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            let fault = try Fault(json: body.readableBytesView)
            state.addFault(fault)
            return SinkAnswers.AddedFault(fault: fault)
        }

        router.get("/faults") { _, _ in
            SinkAnswers.Faults(faults: state.faults())
        }

        router.delete("/faults") { _, _ in
            SinkAnswers.Deleted(deleted: state.clearFaults())
        }

        router.get("/stats") { _, _ in
            state.stats()
        }
    }

    /// Records a push received on either endpoint in `state` (what `check` found of its credentials, not their
    /// text), prints its log line when `log` is set, and returns the answer to send.
    static func receive(
        _ provider: PushProvider,
        token: String,
        body: ByteBuffer,
        request: Request,
        context: SinkRequestContext,
        check: SinkCredentials.Check,
        into state: SinkState,
        log: Bool
    ) -> PushAnswer {
        let answer = state.record(
            provider: provider,
            token: token,
            headers: Self.headerList(request.headers),
            authorization: check.recorded,
            body: body.readableBytesView,
            http2: context.isHTTP2,
            refusal: check.refusal
        )
        if log {
            ReceivedPushLogLine.print(answer: answer, token: token, body: body.readableBytesView)
        }
        return answer
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
        PushPayloadSummary.fcmToken(in: body) ?? ""
    }
}
