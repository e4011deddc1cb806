import BadgeWire
import Foundation
import Hummingbird
import NIOCore

extension SinkServer {
    /// Adds the push endpoints and the inspection API to `router`.
    func addRoutes(to router: Router<SinkRequestContext>) {
        let state = self.state
        let credentials = self.credentials
        let logDeliveries = self.configuration.logDeliveries
        let maxBody = self.configuration.maxRequestBytes
        let maxWait = self.configuration.maxWaitSeconds

        for (path, sandbox) in [("/3/device/{token}", false), ("/sandbox/3/device/{token}", true)] {
            router.post(RouterPath(path)) { request, context -> Response in
                let token = context.parameters.get("token") ?? ""
                var headers = HTTPFields()
                headers[.init("apns-id")!] = request.headers[.init("apns-id")!] ?? Self.newAPNsID()
                guard let body = try await Self.body(of: request, upTo: maxBody) else {
                    return Self.json(Array("{\"reason\":\"PayloadTooLarge\"}".utf8), status: 413, headers: headers)
                }
                let check = credentials.checkAPNs(
                    authorization: request.headers[.authorization], topic: request.headers[.init("apns-topic")!])
                let answer = Self.receive(
                    .apns, token: token, body: body, request: request, context: context, check: check, into: state,
                    log: logDeliveries, sandbox: sandbox)
                if let broken = try await Self.applyFault(of: answer, context: context) {
                    return broken
                }
                guard !answer.isSuccess else {
                    return Response(status: .ok, headers: headers)
                }
                return Self.json(answer.apnsBody, status: answer.status, headers: headers)
            }
        }

        router.post("/v1/projects/{project}/messages:send") { request, context -> Response in
            let project = context.parameters.get("project") ?? ""
            guard let body = try await Self.body(of: request, upTo: maxBody) else {
                throw SinkError(
                    code: .bodyTooLarge, message: "the body is over \(maxBody) bytes", httpStatus: 413)
            }
            let token = Self.fcmToken(in: body.readableBytesView)
            let check = credentials.checkFCM(authorization: request.headers[.authorization], project: project)
            let answer = Self.receive(
                .fcm, token: token, body: body, request: request, context: context, check: check, into: state,
                log: logDeliveries)
            if let broken = try await Self.applyFault(of: answer, context: context) {
                return broken
            }
            return Self.json(answer.fcmBody(project: project), status: answer.status)
        }

        router.get("/deliveries") { request, _ -> Response in
            let query = try SinkQuery(request.uri.queryParameters)
            let filter = try query.deliveryFilter()
            let minimum = try query.integer("min", range: 0...Int.max) ?? 1
            guard let wait = try query.wait(limit: maxWait) else {
                return Self.json(state.receivedPushesJSON(filter))
            }
            let (snapshot, held) = try await state.wait(tokens: filter.tokens.map(Set.init), until: wait) {
                let snapshot = state.snapshot(filter)
                return (snapshot, snapshot.records.count >= minimum)
            }
            return Self.json(snapshot.json, status: held ? 200 : 412, headers: Self.waitHeaders(held: held))
        }

        router.delete("/deliveries") { request, _ -> SinkAnswers.Deleted in
            let query = try SinkQuery(request.uri.queryParameters)
            if let tokens = try query.tokens() {
                return SinkAnswers.Deleted(deleted: state.clear(tokens: Set(tokens)))
            }
            return SinkAnswers.Deleted(deleted: state.clear())
        }

        router.get("/devices") { _, _ in
            SinkAnswers.Devices(devices: state.devices().map(SinkAnswers.Device.init))
        }

        router.get("/devices/{token}") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            let query = try SinkQuery(request.uri.queryParameters)
            let badge = try query.integer("badge", range: 0...Int.max)
            let after = try query.integer("after", range: 0...Int.max)
            func holds(_ device: DeviceSummary?) -> Bool {
                guard let device else { return false }
                return (badge == nil || device.badge == badge) && after.map { device.lastSeq > $0 } ?? true
            }
            var device = state.device(token)
            var held = holds(device)
            var headers = HTTPFields()
            let wait = try query.wait(limit: maxWait)
            if let wait {
                (device, held) = try await state.wait(tokens: [token], until: wait) {
                    let device = state.device(token)
                    return (device, holds(device))
                }
                headers = Self.waitHeaders(held: held)
            }
            guard let device else {
                let error = SinkError(
                    code: .unknownDevice, message: "no push to \(token) is recorded", httpStatus: 404)
                let body = SinkAnswers.Failure(error: .init(code: error.code.rawValue, message: error.message))
                return try Self.encoded(body, status: 404, headers: headers)
            }
            return try Self.encoded(
                SinkAnswers.Device(device), status: wait == nil || held ? 200 : 412, headers: headers)
        }

        // An OAuth2 token endpoint (RFC 7523 JWT bearer grant) standing in for Google's, for FCM tests.
        router.post("/token") { request, context -> Response in
            let body = try await request.body.collect(upTo: 64 * 1024)
            switch credentials.issueToken(form: String(buffer: body)) {
            case .success(let issued):
                let answer = SinkAnswers.IssuedToken(accessToken: issued.token, expiresIn: issued.lifetime)
                return try answer.response(from: request, context: context)
            case .failure(let error):
                let answer = SinkAnswers.TokenError(error: error.code.rawValue, errorDescription: error.message)
                let status: HTTPResponse.Status = error.code == .invalidClient ? .unauthorized : .badRequest
                return try EditedResponse(status: status, response: answer).response(from: request, context: context)
            }
        }

        router.post("/faults") { request, _ in
            guard let body = try await Self.body(of: request, upTo: maxBody) else {
                throw SinkError(
                    code: .bodyTooLarge, message: "the body is over \(maxBody) bytes", httpStatus: 413)
            }
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
        log: Bool,
        sandbox: Bool = false
    ) -> PushAnswer {
        let answer = state.record(
            provider: provider,
            token: token,
            headers: Self.headerList(request.headers),
            authorization: check.recorded,
            body: body.readableBytesView,
            http2: context.isHTTP2,
            refusal: check.refusal,
            sandbox: sandbox
        )
        if log {
            ReceivedPushLogLine.print(answer: answer, token: token, body: body.readableBytesView)
        }
        return answer
    }

    /// The request's body; nil when it is over `limit` bytes.
    static func body(of request: Request, upTo limit: Int) async throws -> ByteBuffer? {
        do {
            return try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            return nil
        }
    }

    /// Waits out the delay of the fault that fired for a push, if any, then breaks the connection when it is a
    /// connection fault (returning the response that will not be seen); nil when the push is to be answered.
    static func applyFault(of answer: PushAnswer, context: SinkRequestContext) async throws -> Response? {
        if answer.delayMilliseconds > 0 {
            try await Task.sleep(for: .milliseconds(answer.delayMilliseconds))
        }
        guard let connection = answer.connection else { return nil }
        await Self.breakConnection(connection, context: context)
        return Response(status: .serviceUnavailable)
    }

    /// The `Sink-Wait` header of an answer that waited: `met` when the condition held, else `timeout`.
    static func waitHeaders(held: Bool) -> HTTPFields {
        var headers = HTTPFields()
        headers[Self.waitHeader] = held ? "met" : "timeout"
        return headers
    }

    /// `Sink-Wait`.
    static let waitHeader = HTTPFields.Element.Name("Sink-Wait")!

    /// A `Codable` answer encoded as the context encodes them (sorted keys), with a status.
    static func encoded(_ value: some Encodable, status: Int, headers: HTTPFields = HTTPFields()) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Self.json(Array(try encoder.encode(value)), status: status, headers: headers)
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

    /// A new random `apns-id` for an answer whose request had none: a UUID in lowercase, as APNs sends it.
    static func newAPNsID() -> String {
        let uuid = UUID().uuid
        let bytes = withUnsafeBytes(of: uuid) { Array($0) }
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { text in
            var index = 0
            for (position, byte) in bytes.enumerated() {
                if position == 4 || position == 6 || position == 8 || position == 10 {
                    text[index] = UInt8(ascii: "-")
                    index += 1
                }
                text[index] = digits[Int(byte >> 4)]
                text[index + 1] = digits[Int(byte & 0x0f)]
                index += 2
            }
            return index
        }
    }

    /// `message.token` of an FCM v1 request body, or "" when the body has none.
    static func fcmToken<Bytes: Collection<UInt8>>(in body: Bytes) -> String {
        PushPayloadSummary.fcmToken(in: body) ?? ""
    }
}
