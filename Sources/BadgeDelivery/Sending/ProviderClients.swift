import AsyncHTTPClient
import BadgeWire
import Foundation
import NIOSSL

/// The HTTP clients pushes go out on: `clientsPerProvider` for APNs (presenting the client certificate with
/// certificate auth) and as many for FCM and its token endpoint, all trusting the system roots plus
/// `trustedRootsFile`. Over `https://` they negotiate HTTP/2 by ALPN (APNs requires it) and keep one connection
/// per host each; over `http://` (a local sink) they speak HTTP/1.1 with up to `http1ConnectionsPerHost`
/// connections. A provider not in the configuration's `providers` gets no clients. The owner shuts them down.
public final class ProviderClients: Sendable {
    let apns: [HTTPClient]
    let fcm: [HTTPClient]

    /// Creates the clients; throws when a certificate or key file cannot be loaded.
    public init(configuration: DeliveryConfiguration, http1ConnectionsPerHost: Int = 8) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = configuration.trustedRootsFile {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw CredentialError(message: "cannot read the --ca-file \(file)", retryable: false)
            }
            tls.additionalTrustRoots = [.file(file)]
        }
        var apnsTLS = tls
        if configuration.providers.contains(.apns),
            case .certificate(let chainFile, let keyFile) = configuration.apnsCredentials
        {
            do {
                apnsTLS.certificateChain = try NIOSSLCertificate.fromPEMFile(chainFile).map { .certificate($0) }
                apnsTLS.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
            } catch {
                throw CredentialError(
                    message: "cannot load the APNs client certificate \(chainFile) and key \(keyFile): \(error)",
                    retryable: false)
            }
        }
        func clients(_ tls: TLSConfiguration) -> [HTTPClient] {
            (0..<max(1, configuration.clientsPerProvider)).map { _ in
                var http = HTTPClient.Configuration(tlsConfiguration: tls)
                http.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, http1ConnectionsPerHost)
                if configuration.http1Only { http.httpVersion = .http1Only }
                return HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
            }
        }
        apns = configuration.providers.contains(.apns) ? clients(apnsTLS) : []
        fcm = configuration.providers.contains(.fcm) ? clients(tls) : []
    }

    /// The clients of `provider`: empty when it is not configured.
    func pool(_ provider: PushProvider) -> [HTTPClient] {
        switch provider {
        case .apns: apns
        case .fcm: fcm
        }
    }

    /// Shuts every client down.
    public func shutdown() async throws {
        for client in apns + fcm { try await client.shutdown() }
    }
}
