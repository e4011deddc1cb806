import Crypto
import CryptoExtras
import Foundation
import ProviderAuth
import Testing

@testable import BadgeDelivery

@Suite("Delivery settings")
struct DeliveryConfigurationTests {
    @Test func aLocalSinkOverHTTPNeedsNoCredentials() {
        #expect(DeliveryConfiguration().problems.isEmpty)
        #expect(DeliveryConfiguration(apnsBaseURL: "http://sink:8787", fcmBaseURL: "http://sink:8787").problems.isEmpty)
    }

    @Test func theRealHostsWithoutCredentialsNameTheMissingSetting() {
        let configuration = DeliveryConfiguration(
            apnsBaseURL: "https://api.push.apple.com", apnsSandboxBaseURL: "https://api.sandbox.push.apple.com",
            fcmBaseURL: "HTTPS://fcm.googleapis.com")
        let problems = configuration.problems
        #expect(problems.count == 3)
        #expect(problems[0].hasPrefix("--apns-url is https://api.push.apple.com but no APNs credentials are set"))
        #expect(problems[0].contains("--apns-key-file"))
        #expect(problems[1].hasPrefix("--apns-sandbox-url"))
        #expect(problems[2].contains("--fcm-credentials-file"))
    }

    @Test func sandboxDevicesGoToApplesSandboxUnlessProductionGoesToAStandIn() {
        let sandbox = "https://api.sandbox.push.apple.com"
        #expect(DeliveryConfiguration.defaultSandboxURL(apnsURL: nil) == sandbox)
        // Apple's production host named explicitly (as a compose file does): a sandbox token sent there would be
        // answered BadDeviceToken and its device deactivated.
        #expect(DeliveryConfiguration.defaultSandboxURL(apnsURL: "https://api.push.apple.com") == sandbox)
        #expect(DeliveryConfiguration.defaultSandboxURL(apnsURL: "https://API.push.apple.com:443/") == sandbox)
        #expect(DeliveryConfiguration.defaultSandboxURL(apnsURL: "http://sink:8787") == "http://sink:8787")
        #expect(
            DeliveryConfiguration.defaultSandboxURL(apnsURL: "https://apns-proxy.internal")
                == "https://apns-proxy.internal")
    }

    @Test(
        arguments: [
            ("http://127.0.0.1:8787", false), ("http://127.255.0.9", false), ("HTTP://LOCALHOST:8787/", false),
            ("http://localhost", false), ("http://[::1]:8787", false), ("http://[0:0:0:0:0:0:0:1]:1", false),
            ("https://sink.example:8787", false), ("https://10.0.0.1", false), ("ftp://example.com", false),
            ("http://sink:8787", true), ("http://10.0.0.1:8787", true), ("http://128.0.0.1", true),
            ("http://127.0.0.1.example.com", true), ("http://localhost.example.com", true), ("http://[::2]", true),
            ("http://[::ffff:10.0.0.1]", true), ("http://0177.0.0.1", true), ("http://127.1", true),
            ("http://127.0.0.1@example.com", true), ("http://0.0.0.0:8787", true),
        ] as [(String, Bool)])
    func credentialsGoInTheClearOnlyToLoopback(url: String, refused: Bool) {
        #expect(DeliveryConfiguration.isCleartextToAnotherHost(url) == refused)
    }

    @Test func credentialsOverPlainHTTPToAnotherHostAreRefusedNamingTheSetting() throws {
        let key = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K1", teamID: "T1")
        let account = try ServiceAccount(
            json: try JSONSerialization.data(withJSONObject: [
                "type": "service_account", "client_email": "pusher@p.iam.gserviceaccount.com",
                "token_uri": "http://oauth.example/token",
                "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
            ]))
        let remote = DeliveryConfiguration(
            apnsBaseURL: "http://sink.example:8787", apnsSandboxBaseURL: "http://[::1]:8787",
            fcmBaseURL: "http://10.1.2.3:8787", apnsCredentials: .token(key), fcmCredentials: account)
        let problems = remote.problems
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.first?.hasPrefix("--apns-url is http://sink.example:8787: the worker will not send") == true)
        #expect(problems.contains { $0.hasPrefix("--fcm-url is http://10.1.2.3:8787") })
        #expect(problems.contains { $0.hasPrefix("--fcm-credentials-file names the token_uri http://oauth.example") })
        // A client certificate is as much a credential; without any, plain http anywhere is allowed.
        let certificate = DeliveryConfiguration(
            apnsBaseURL: "http://127.0.0.1:8787", apnsSandboxBaseURL: "http://sink:8787",
            apnsCredentials: .certificate(chainFile: "c.pem", keyFile: "k.pem"))
        #expect(certificate.problems.map { $0.prefix(18) } == ["--apns-sandbox-url"])
        #expect(
            DeliveryConfiguration(apnsBaseURL: "http://localhost:8787", apnsCredentials: .token(key)).problems
                .isEmpty)
    }

    @Test func credentialsSatisfyTheirProvider() throws {
        let key = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K1", teamID: "T1")
        let configuration = DeliveryConfiguration(
            apnsBaseURL: "https://api.push.apple.com", fcmBaseURL: "http://127.0.0.1:8787",
            apnsCredentials: .token(key))
        #expect(configuration.problems.isEmpty)
        #expect(configuration.apnsSandboxBaseURL == "https://api.push.apple.com", "one stand-in for both unless told")
        let certificate = DeliveryConfiguration(
            apnsBaseURL: "https://api.push.apple.com", fcmBaseURL: "http://127.0.0.1:8787",
            apnsCredentials: .certificate(chainFile: "c.pem", keyFile: "k.pem"))
        #expect(certificate.problems.isEmpty)
    }

    @Test func aDeploymentOfOneProviderNeedsNoSettingOfTheOther() throws {
        let key = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K1", teamID: "T1")
        // The other provider's URL is left at its real host without credentials, and even broken: not checked.
        let apnsOnly = DeliveryConfiguration(
            apnsBaseURL: "https://api.push.apple.com", fcmBaseURL: "https://fcm.googleapis.com",
            apnsCredentials: .token(key), providers: [.apns])
        #expect(apnsOnly.problems.isEmpty, "\(apnsOnly.problems)")
        #expect(apnsOnly.providersDescription == "APNs only")
        let fcmOnly = DeliveryConfiguration(
            apnsBaseURL: "ftp://nowhere", apnsSandboxBaseURL: "https://api.sandbox.push.apple.com",
            fcmBaseURL: "http://127.0.0.1:8787", providers: [.fcm])
        #expect(fcmOnly.problems.isEmpty, "\(fcmOnly.problems)")
        #expect(fcmOnly.providersDescription == "FCM only")
        // A configured provider is still checked.
        let fcmWithoutCredentials = DeliveryConfiguration(fcmBaseURL: "https://fcm.googleapis.com", providers: [.fcm])
        #expect(fcmWithoutCredentials.problems.count == 1)
        #expect(fcmWithoutCredentials.problems.first?.hasPrefix("--fcm-url is https://fcm.googleapis.com") == true)
    }

    @Test func noProviderAtAllIsAProblemNamingTheSettings() {
        let none = DeliveryConfiguration(providers: [])
        #expect(none.problems.count == 1)
        #expect(none.problems.first?.hasPrefix("no push provider is configured") == true)
        #expect(none.problems.first?.contains("--apns-key-file") == true)
        #expect(none.problems.first?.contains("--fcm-credentials-file") == true)
        #expect(DeliveryConfiguration().providersDescription == "APNs and FCM")
    }
}
