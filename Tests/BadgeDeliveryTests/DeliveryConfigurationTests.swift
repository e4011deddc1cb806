import Crypto
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
}
