import BadgeSink
import Foundation
import ProviderAuth
import SinkTestSupport
import TestCredentials
import Testing

/// The sink records what it checked of a push's credentials (contract section 6), never the credential: no
/// `GET /deliveries`, no `/stats`, no recorded value holds the text of a token it was sent.
@Suite("The sink keeps no secrets", .serialized)
struct SinkSecretsTests {
    private static func checking(_ credentials: TestCredentials) -> SinkConfiguration {
        SinkConfiguration(
            tlsCertificateFile: credentials.certificateFile, tlsKeyFile: credentials.certificateKeyFile,
            apnsKeyFiles: [credentials.apnsKeyID: credentials.apnsPublicKeyFile], apnsTeamID: credentials.apnsTeamID,
            fcmPublicKeyFile: credentials.serviceAccountPublicKeyFile)
    }

    private static func providerToken(
        _ credentials: TestCredentials, keyID: String? = nil, issuedAt: Date
    ) throws
        -> String
    {
        let key = try APNsSigningKey(
            file: credentials.apnsKeyFile, keyID: keyID ?? credentials.apnsKeyID, teamID: credentials.apnsTeamID)
        return try key.token(issuedAt: Int64(issuedAt.timeIntervalSince1970))
    }

    /// The `headers.authorization` object of each listed delivery (nil where it has none).
    private static func authorizations(_ deliveries: [[String: Any]]) -> [[String: Any]?] {
        deliveries.map { ($0["headers"] as? [String: Any])?["authorization"] as? [String: Any] }
    }

    /// The `secrets` found in any text the sink shows of what it recorded: the deliveries and the counters.
    private static func leaked(_ secrets: [String], by sink: some SinkRequests) async throws -> [String] {
        let deliveries = try await sink.send("GET", "/deliveries", headers: [])
        let stats = try await sink.send("GET", "/stats", headers: [])
        #expect(deliveries.status == 200 && stats.status == 200)
        let shown = deliveries.text + "\n" + stats.text
        return secrets.filter { shown.contains($0) }
    }

    /// The secret parts of a bearer value: the whole value and, for a JWT, its signature (the part that makes it
    /// usable; its header and claims are what the sink shows, decoded).
    private static func secrets(of token: String) -> [String] {
        var secrets = [token]
        if let signature = token.split(separator: ".").dropFirst(2).first { secrets.append(String(signature)) }
        return secrets
    }

    @Test func apnsProviderTokensAreRecordedAsWhatWasCheckedValidOrNotNeverAsText() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        try await TestSink.withSink(configuration: Self.checking(credentials)) { sink in
            let now = Date()
            let valid = try Self.providerToken(credentials, issuedAt: now)
            let expired = try Self.providerToken(credentials, issuedAt: now.addingTimeInterval(-3700))
            let strangers = try Self.providerToken(credentials, keyID: "OTHERKEY01", issuedAt: now)
            let forged = String(valid.dropLast(6)) + "AAAAAA"
            let sent: [(token: String, header: String, status: Int)] = [
                (valid, "bearer \(valid)", 200), (expired, "Bearer \(expired)", 403),
                (strangers, "bearer \(strangers)", 403), (forged, "bearer \(forged)", 403),
                ("not-a-jwt-4f9c2d", "bearer not-a-jwt-4f9c2d", 403),
                ("dXNlcjpzM2NyM3Q=", "Basic dXNlcjpzM2NyM3Q=", 403),
            ]
            for (index, push) in sent.enumerated() {
                let answer = try await sink.pushAPNs("aa0\(index)", headers: [("authorization", push.header)])
                #expect(answer.status == push.status, "\(push.header)")
            }
            _ = try await sink.pushAPNs("aa09")

            let leaked = try await Self.leaked(sent.flatMap { Self.secrets(of: $0.token) }, by: sink)
            #expect(leaked.isEmpty, "the sink shows secrets")
            let recorded = sink.state.receivedPushes()
            #expect(recorded.allSatisfy { $0.headers["authorization"] == nil })
            for push in recorded {
                let text = push.headers.values.joined(separator: "\n") + "\(push.authorization as Any)"
                #expect(sent.allSatisfy { !text.contains($0.token) }, "seq \(push.seq) keeps a token: \(text)")
            }

            let listed = Self.authorizations(try await sink.deliveries())
            try #require(listed.count == 7)
            let teamID = credentials.apnsTeamID
            let rfc3339 = ISO8601DateFormatter()
            rfc3339.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let issuedAt = rfc3339.string(from: Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down)))
            #expect(listed[0]?["scheme"] as? String == "bearer")
            #expect(listed[0]?["verified"] as? Bool == true)
            #expect(listed[0]?["key_id"] as? String == credentials.apnsKeyID)
            #expect(listed[0]?["issuer"] as? String == teamID)
            #expect(listed[0]?["issued_at"] as? String == issuedAt)
            #expect(listed[0]?["app"] == nil, "the sink knows no apps")
            // Refused: expired, a key the sink does not know, a bad signature. What the token said is shown,
            // and that it did not verify.
            for index in 1...3 {
                #expect(listed[index]?["scheme"] as? String == "bearer")
                #expect(listed[index]?["verified"] as? Bool == false)
                #expect(listed[index]?["issuer"] as? String == teamID)
            }
            #expect(listed[1]?["key_id"] as? String == credentials.apnsKeyID)
            #expect(listed[2]?["key_id"] as? String == "OTHERKEY01")
            #expect(listed[3]?["key_id"] as? String == credentials.apnsKeyID)
            #expect(listed[4].map { $0.keys.sorted() } == ["scheme", "verified"], "nothing readable in it")
            #expect(listed[4]?["verified"] as? Bool == false)
            #expect(listed[5]?["scheme"] as? String == "other")
            #expect(listed[5]?["verified"] as? Bool == false)
            #expect(listed[6] == nil, "no authorization header, no key")
            #expect(recorded.map(\.authorization?.verified) == [true, false, false, false, false, false, nil])
        }
    }

    @Test func fcmAccessTokensAreRecordedAsTheAccountTheyWereIssuedToNeverAsText() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        try await RouterSink.withSink(configuration: Self.checking(credentials)) { sink in
            let account = try ServiceAccount(file: credentials.serviceAccountFile)
            let assertion = try account.assertion(issuedAt: Int64(Date().timeIntervalSince1970))
            let issued = try await sink.send(
                "POST", "/token",
                body: Array(
                    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8),
                headers: [("content-type", "application/x-www-form-urlencoded")])
            let token = try #require(issued.json["access_token"] as? String)
            let path = "/v1/projects/\(credentials.fcmProject)/messages:send"
            let payload = #"{"message":{"token":"fcm-1","data":{"badge":"1"}}}"#
            let forged = "sink-00000000-0000-4000-8000-000000000000"
            #expect(
                try await sink.send("POST", path, json: payload, headers: [("authorization", "Bearer \(token)")])
                    .status == 200)
            #expect(
                try await sink.send("POST", path, json: payload, headers: [("authorization", "Bearer \(forged)")])
                    .status == 401)
            #expect(try await sink.send("POST", path, json: payload).status == 401)

            let leaked = try await Self.leaked([token, forged] + Self.secrets(of: assertion), by: sink)
            #expect(leaked.isEmpty, "the sink shows secrets")
            let listed = Self.authorizations(try await sink.deliveries())
            try #require(listed.count == 3)
            #expect(listed[0]?["scheme"] as? String == "bearer")
            #expect(listed[0]?["verified"] as? Bool == true)
            #expect(listed[0]?["issuer"] as? String == account.clientEmail)
            #expect(listed[0]?["issued_at"] is String)
            #expect(listed[0]?["key_id"] == nil, "the assertion named no key")
            #expect(listed[1].map { $0.keys.sorted() } == ["scheme", "verified"], "a token the sink never issued")
            #expect(listed[1]?["verified"] as? Bool == false)
            #expect(listed[2] == nil)
        }
    }

    @Test func withoutKeysNothingIsVerifiedAndTokensAreStillNotKept() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        try await RouterSink.withSink { sink in
            let apnsToken = try Self.providerToken(credentials, issuedAt: Date())
            let fcmToken = "ya29.a0-secret-access-token-7d1e"
            #expect(try await sink.pushAPNs("aa01", headers: [("authorization", "bearer \(apnsToken)")]).status == 200)
            let fcm = #"{"message":{"token":"fcm-1","data":{"badge":"1"}}}"#
            let path = "/v1/projects/demo/messages:send"
            #expect(
                try await sink.send("POST", path, json: fcm, headers: [("Authorization", "Bearer \(fcmToken)")])
                    .status == 200)
            #expect(
                try await sink.pushAPNs(
                    "aa02", headers: [("Proxy-Authorization", "Basic cHJveHk6c2VjcmV0"), ("X-Tag", "kept")]
                ).status == 200)
            _ = try await sink.pushFCM("fcm-2")

            let leaked = try await Self.leaked(
                Self.secrets(of: apnsToken) + [fcmToken, "cHJveHk6c2VjcmV0"], by: sink)
            #expect(leaked.isEmpty, "the sink shows secrets")
            let listed = Self.authorizations(try await sink.deliveries())
            try #require(listed.count == 4)
            // Read from the token, not verified: the sink was given no keys.
            #expect(listed[0]?["verified"] as? Bool == false)
            #expect(listed[0]?["key_id"] as? String == credentials.apnsKeyID)
            #expect(listed[0]?["issuer"] as? String == credentials.apnsTeamID)
            #expect(listed[1].map { $0.keys.sorted() } == ["scheme", "verified"])
            #expect(listed[1]?["scheme"] as? String == "bearer")
            #expect(listed[2] == nil && listed[3] == nil)
            let recorded = sink.state.receivedPushes()
            #expect(recorded[2].headers["x-tag"] == "kept")
            #expect(recorded[2].headers["proxy-authorization"] == nil && recorded[2].authorization == nil)
        }
    }

    @Test func theStoreKeepsNoCredentialHeaderAndCarriesWhatWasCheckedThroughCompactions() throws {
        let state = SinkState(randomSeed: 1, maxDeliveries: 1000)
        let checked = RecordedAuthorization(verified: true, keyID: "K1", issuer: "T1")
        for index in 0..<5000 {
            _ = state.record(
                provider: .apns, token: "t\(index % 7)",
                headers: [("Authorization", "bearer secret-\(index)"), ("proxy-authorization", "Basic c2VjcmV0")],
                authorization: index % 2 == 0 ? checked : nil, body: Array("{}".utf8))
        }
        let kept = state.receivedPushes()
        #expect(kept.count == 1000)
        #expect(kept.allSatisfy { $0.headers.isEmpty })
        // Given what was checked, that is kept; given only the header, its scheme, as not verified.
        #expect(
            kept.allSatisfy {
                $0.authorization == ($0.seq % 2 == 1 ? checked : RecordedAuthorization(verified: false))
            })
        let json = String(decoding: state.receivedPushesJSON(), as: UTF8.self)
        #expect(!json.contains("secret-") && !json.contains("c2VjcmV0"))
        #expect(json.contains(#""authorization":{"scheme":"bearer","verified":true,"key_id":"K1","issuer":"T1"}"#))
    }
}
