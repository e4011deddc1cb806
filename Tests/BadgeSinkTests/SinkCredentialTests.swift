import Foundation
import ProviderAuth
import SinkTestSupport
import TestCredentials
import Testing

@testable import BadgeSink

/// The sink as a faithful stand-in: HTTPS with HTTP/2 and HTTP/1.1, APNs provider tokens and FCM access tokens
/// checked as the real services check them, paged deliveries and a cap on what is kept.
@Suite("Sink credentials, TLS and limits", .serialized)
struct SinkCredentialTests {
    private static func secured(_ credentials: TestCredentials, tokenLifetime: Int = 3600) -> SinkConfiguration {
        SinkConfiguration(
            tlsCertificateFile: credentials.certificateFile, tlsKeyFile: credentials.certificateKeyFile,
            apnsKeyFiles: [credentials.apnsKeyID: credentials.apnsPublicKeyFile], apnsTeamID: credentials.apnsTeamID,
            fcmPublicKeyFile: credentials.serviceAccountPublicKeyFile, fcmTokenLifetime: tokenLifetime)
    }

    private static func bearer(_ credentials: TestCredentials, issuedAt: Date = Date()) throws -> (String, String) {
        let key = try APNsSigningKey(
            file: credentials.apnsKeyFile, keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID)
        return ("authorization", "bearer " + (try key.token(issuedAt: Int64(issuedAt.timeIntervalSince1970))))
    }

    @Test func overTLSItSpeaksHTTP2OrHTTP11AndRecordsWhichWithEveryHeader() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        for http1Only in [false, true] {
            try await TestSink.withSink(configuration: Self.secured(credentials), http1Only: http1Only) {
                sink in
                let authorization = try Self.bearer(credentials)
                let answer = try await sink.pushAPNs("aa11", headers: [authorization])
                #expect(answer.status == 200)
                let delivery = try #require(sink.state.receivedPushes().first)
                #expect(delivery.httpVersion == (http1Only ? "1.1" : "2"))
                #expect(delivery.headers["authorization"] == nil, "the token is not kept")
                #expect(delivery.authorization?.verified == true)
                #expect(delivery.authorization?.keyID == credentials.apnsKeyID)
                let listed = try await sink.deliveries()
                #expect(listed.first?["http_version"] as? String == (http1Only ? "1.1" : "2"))
            }
        }
    }

    @Test func keysOfSeveralTeamsVerifyAndEachPushIsRecordedWithItsAppAndRefusedOnAnotherAppsTopic() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        let other = try credentials.writeAPNsKey(keyID: "PSALMSKEY1")
        var configuration = Self.secured(credentials)
        configuration.apnsKeyFiles["PSALMSKEY1"] = other.publicKeyFile
        configuration.apnsKeyTeams = ["PSALMSKEY1": "PSALMSTEAM"]
        configuration.apps = [
            SinkApp(name: "amen", apnsKeyIDs: [credentials.apnsKeyID], apnsTopics: ["com.example.amen"]),
            SinkApp(name: "psalms", apnsKeyIDs: ["PSALMSKEY1"], apnsTopics: ["org.psalms.app"]),
        ]
        let now = Int64(Date().timeIntervalSince1970)
        let psalms = try APNsSigningKey(file: other.keyFile, keyID: "PSALMSKEY1", teamID: "PSALMSTEAM")
        let psalmsBearer = ("authorization", "bearer " + (try psalms.token(issuedAt: now)))
        try await TestSink.withSink(configuration: configuration) { sink in
            let amen = try await sink.pushAPNs(
                "aa21", headers: [try Self.bearer(credentials), ("apns-topic", "com.example.amen")])
            #expect(amen.status == 200)
            let own = try await sink.pushAPNs("aa22", headers: [psalmsBearer, ("apns-topic", "org.psalms.app")])
            #expect(own.status == 200, "the other team's key verifies against its own team")
            let foreign = try await sink.pushAPNs("aa23", headers: [psalmsBearer, ("apns-topic", "com.example.amen")])
            #expect(foreign.status == 400)
            #expect(foreign.json["reason"] as? String == "TopicDisallowed")
            // A key of one team presented as the other's is refused.
            let forged = try APNsSigningKey(file: other.keyFile, keyID: "PSALMSKEY1", teamID: credentials.apnsTeamID)
            let wrongTeam = try await sink.pushAPNs(
                "aa24",
                headers: [
                    ("authorization", "bearer " + (try forged.token(issuedAt: now))), ("apns-topic", "org.psalms.app"),
                ])
            #expect(wrongTeam.status == 403)
            let listed = try await sink.deliveries()
            let byToken = Dictionary(
                uniqueKeysWithValues: listed.compactMap { delivery -> (String, [String: Any])? in
                    guard let token = delivery["token"] as? String,
                        let headers = delivery["headers"] as? [String: Any],
                        let authorization = headers["authorization"] as? [String: Any]
                    else { return nil }
                    return (token, authorization)
                })
            #expect(byToken["aa21"]?["app"] as? String == "amen")
            #expect(byToken["aa22"]?["app"] as? String == "psalms")
            #expect(byToken["aa22"]?["issuer"] as? String == "PSALMSTEAM")
            #expect(byToken["aa22"]?["verified"] as? Bool == true)
            #expect(byToken["aa23"]?["verified"] as? Bool == false)
        }
    }

    @Test func appsBringingTheirOwnKeysShareATeamsKeyAndRefuseAConflictingOne() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        let key = try APNsSigningKey(
            file: credentials.apnsKeyFile, keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID)
        let own = SinkApp.APNsKey(keyID: key.keyID, teamID: key.teamID, publicKeyPEM: key.publicKeyPEM)
        // Two apps of one team, one key: it pushes to either app's topic, recorded as the app owning the topic.
        var configuration = SinkConfiguration()
        configuration.apps = [
            SinkApp(name: "amen", apnsTopics: ["com.example.amen"]),
            SinkApp(name: "amen-lite", apnsTopics: ["com.example.amen.lite"]),
        ]
        configuration.apps[0].apnsKeys = [own]
        configuration.apps[1].apnsKeys = [own]
        try await TestSink.withSink(configuration: configuration) { sink in
            let authorization = try Self.bearer(credentials)
            let anonymous = try await sink.pushAPNs("ab01", headers: [("apns-topic", "com.example.amen")])
            #expect(anonymous.json["reason"] as? String == "MissingProviderToken", "the apps' keys are checked")
            for (token, topic) in [("ab02", "com.example.amen"), ("ab03", "com.example.amen.lite")] {
                #expect(try await sink.pushAPNs(token, headers: [authorization, ("apns-topic", topic)]).status == 200)
            }
            let other = try await sink.pushAPNs("ab04", headers: [authorization, ("apns-topic", "org.psalms.app")])
            #expect(other.json["reason"] as? String == "TopicDisallowed")
            #expect(sink.state.receivedPushes().map { $0.authorization?.app } == [nil, "amen", "amen-lite", "amen"])
        }
        // One key id with two different keys is a configuration error, not a silent choice.
        let stranger = try credentials.writeAPNsKey(keyID: "STRANGER01")
        let strangerKey = try APNsSigningKey(file: stranger.keyFile, keyID: key.keyID, teamID: key.teamID)
        configuration.apps[1].apnsKeys = [
            SinkApp.APNsKey(keyID: key.keyID, teamID: key.teamID, publicKeyPEM: strangerKey.publicKeyPEM)
        ]
        await #expect(throws: SinkError.self) {
            try await TestSink.withSink(configuration: configuration) { _ in }
        }
    }

    @Test func apnsTokensAreCheckedAsAppleChecksThem() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        try await TestSink.withSink(configuration: Self.secured(credentials)) { sink in
            let missing = try await sink.pushAPNs("aa01")
            #expect(missing.status == 403)
            #expect(missing.json["reason"] as? String == "MissingProviderToken")
            let old = try await sink.pushAPNs(
                "aa02", headers: [try Self.bearer(credentials, issuedAt: Date().addingTimeInterval(-3700))])
            #expect(old.json["reason"] as? String == "ExpiredProviderToken")
            let stranger = try APNsSigningKey(
                file: credentials.apnsKeyFile, keyID: "OTHERKEY01", teamID: credentials.apnsTeamID)
            let unknown = try await sink.pushAPNs(
                "aa03",
                headers: [
                    ("authorization", "bearer " + (try stranger.token(issuedAt: Int64(Date().timeIntervalSince1970))))
                ])
            #expect(unknown.json["reason"] as? String == "InvalidProviderToken")
            #expect(try await sink.pushAPNs("aa04", headers: [try Self.bearer(credentials)]).status == 200)
            // Every refused push is recorded with its status and reason.
            #expect(sink.state.receivedPushes().map(\.status) == [403, 403, 403, 200])
        }
    }

    @Test func fcmSendsNeedAnAccessTokenFromTheTokenEndpoint() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        try await TestSink.withSink(configuration: Self.secured(credentials, tokenLifetime: 1)) { sink in
            let payload = #"{"message":{"token":"fcm-1","data":{"badge":"1"}}}"#
            let path = "/v1/projects/\(credentials.fcmProject)/messages:send"
            let anonymous = try await sink.send("POST", path, json: payload)
            #expect(anonymous.status == 401)

            let account = try ServiceAccount(file: credentials.serviceAccountFile)
            let assertion = try account.assertion(issuedAt: Int64(Date().timeIntervalSince1970))
            let grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
            let issued = try await sink.send(
                "POST", "/token", body: Array(grant.utf8),
                headers: [("content-type", "application/x-www-form-urlencoded")])
            #expect(issued.status == 200)
            #expect(issued.json["expires_in"] as? Int == 1)
            let token = try #require(issued.json["access_token"] as? String)
            let sent = try await sink.send("POST", path, json: payload, headers: [("authorization", "Bearer \(token)")])
            #expect(sent.status == 200)
            try await Task.sleep(for: .milliseconds(1100))
            let late = try await sink.send("POST", path, json: payload, headers: [("authorization", "Bearer \(token)")])
            #expect(late.status == 401)
            // The token the sink issued, verified then expired: recorded as such, to the account it was issued to.
            let checked = sink.state.receivedPushes().map(\.authorization)
            #expect(checked.map { $0?.verified } == [nil, true, false])
            #expect(checked.dropFirst().allSatisfy { $0?.issuer == account.clientEmail })

            let forged = assertion.dropLast(4) + "AAAA"
            let refused = try await sink.send(
                "POST", "/token",
                body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(forged)".utf8)
            )
            #expect(refused.status == 400)
            #expect(refused.json["error"] as? String == "invalid_grant")
        }
    }

    /// Malformed token requests are answered with an OAuth2 error, never a crash: one byte (`=`), empty pairs,
    /// pairs without `=`, bad escapes, binary. The sink goes on serving.
    @Test func malformedTokenFormsAreRefusedAndTheSinkGoesOn() async throws {
        let credentials = try TestCredentials(tokenURI: "https://127.0.0.1/token")
        defer { credentials.remove() }
        try await TestSink.withSink(configuration: Self.secured(credentials)) { sink in
            let forms: [[UInt8]] = [
                Array("=".utf8), Array("&".utf8), Array("&&=&=".utf8), Array("==".utf8), Array("grant_type".utf8),
                Array("=x&assertion".utf8), Array("grant_type=%ZZ&assertion=%".utf8), Array("%=%".utf8),
                [0xFF, 0x3D, 0x00],
                Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=".utf8),
                Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c".utf8),
            ]
            for form in forms {
                let answer = try await sink.send(
                    "POST", "/token", body: form, headers: [("content-type", "application/x-www-form-urlencoded")])
                #expect(answer.status == 400, "\(form): \(answer.status)")
            }
            #expect(try await sink.send("GET", "/devices").status == 200, "the sink still serves")
        }
    }

    @Test func formFieldsReadAnyBytes() {
        #expect(SinkCredentials.formFields("=") == ["": ""])
        #expect(SinkCredentials.formFields("a=1&b&=c&a=2") == ["a": "2", "b": "", "": "c"])
        #expect(SinkCredentials.formFields("x=%41+b%ZZ") == ["x": "%41 b%ZZ"])
        #expect(SinkCredentials.formFields("x=%41+b") == ["x": "A b"])
    }

    @Test func deliveriesArePagedAndTheOldestAreDroppedBeyondTheCap() async throws {
        try await RouterSink.withSink(configuration: SinkConfiguration(maxDeliveries: 3)) { sink in
            for index in 1...5 { _ = try await sink.pushAPNs("cc0\(index)") }
            let kept = try await sink.deliveries()
            #expect(kept.map { $0["seq"] as? Int } == [3, 4, 5])
            let stats = try await sink.send("GET", "/stats").json
            #expect(stats["received"] as? Int == 5)
            #expect(stats["dropped"] as? Int == 2)
            #expect(try await sink.deliveries("?limit=2").map { $0["seq"] as? Int } == [3, 4])
            #expect(try await sink.deliveries("?after=3&limit=1").map { $0["seq"] as? Int } == [4])
            #expect(try await sink.deliveries("?token=cc01").isEmpty)
            #expect(try await sink.deliveries("?token=cc05").count == 1)
            #expect(try await sink.send("GET", "/deliveries?limit=-1").status == 400)
        }
    }

    @Test func theCapHoldsThroughCompactions() {
        let state = SinkState(randomSeed: 1, maxDeliveries: 1000)
        for index in 0..<5000 {
            _ = state.record(provider: .apns, token: "t\(index % 7)", headers: [], body: Array("{}".utf8))
        }
        let kept = state.receivedPushes()
        #expect(kept.count == 1000)
        #expect(kept.first?.seq == 4001 && kept.last?.seq == 5000)
        #expect(state.receivedPushes(token: "t3").allSatisfy { $0.seq > 4000 && ($0.seq - 1) % 7 == 3 })
        #expect(state.stats().dropped == 4000)
    }
}
