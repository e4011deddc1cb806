import AsyncHTTPClient
import BadgeWire
import Foundation
import NIOSSL

/// The HTTP clients pushes go out on: one pool per provider account (an APNs team's key, an APNs certificate, a
/// Google service account, or no credentials), shared by the apps of that account and never by two accounts, so
/// that no connection carries two teams' provider tokens (Apple asks for this). Each pool has `clientsPerProvider`
/// clients (an APNs certificate account's present the certificate), all trusting the system roots plus
/// `trustedRootsFile`. Over `https://` they negotiate HTTP/2 by ALPN (APNs requires it) and keep one connection per
/// host each. Pushes to an `http://` base URL (a local sink, a stand-in) go out on an ``HTTP1PushClient`` of the
/// account instead, one per base URL, with up to `clientsPerProvider` × `http1ConnectionsPerHost` connections.
/// A provider not in the configuration's `providers` gets no clients. The owner shuts them down.
public final class ProviderClients: Sendable {
    /// The clients of each account.
    let pools: [ProviderAccount: [HTTPClient]]
    /// The account of each app's side: app name, then provider.
    let accounts: [String: [PushProvider: ProviderAccount]]
    /// The plain HTTP/1.1 clients of each account, by `http://` base URL.
    let plain: [ProviderAccount: [String: HTTP1PushClient]]

    /// Creates the clients; throws when a certificate or key file cannot be loaded.
    public init(configuration: DeliveryConfiguration, http1ConnectionsPerHost: Int = 8) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = configuration.trustedRootsFile {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw CredentialError(code: .unreadable, message: "cannot read the --ca-file \(file)", retryable: false)
            }
            tls.additionalTrustRoots = [.file(file)]
        }
        func clients(_ tls: TLSConfiguration) -> [HTTPClient] {
            (0..<max(1, configuration.clientsPerProvider)).map { _ in
                var http = HTTPClient.Configuration(tlsConfiguration: tls)
                http.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, http1ConnectionsPerHost)
                if configuration.http1Only { http.httpVersion = .http1Only }
                // No spans: the product bootstraps no tracer, and with the default one (the global no-op tracer)
                // every request would still run in a span whose attributes parse its URL a second time.
                http.tracing.tracer = nil
                return HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
            }
        }
        var pools: [ProviderAccount: [HTTPClient]] = [:]
        var accounts: [String: [PushProvider: ProviderAccount]] = [:]
        var plain: [ProviderAccount: [String: HTTP1PushClient]] = [:]
        do {
            for app in configuration.effectiveApps {
                for provider in PushProvider.allCases where configuration.providers.contains(provider) {
                    guard let account = app.account(provider) else { continue }
                    accounts[app.name, default: [:]][provider] = account
                    guard pools[account] == nil else { continue }
                    var accountTLS = tls
                    if provider == .apns, case .certificate(let chainFile, let keyFile) = app.apns?.credentials {
                        do {
                            accountTLS.certificateChain = try NIOSSLCertificate.fromPEMFile(chainFile).map {
                                .certificate($0)
                            }
                            accountTLS.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
                        } catch {
                            throw CredentialError(
                                code: .unreadable,
                                message: "cannot load the APNs client certificate \(chainFile) and key \(keyFile): "
                                    + "\(error)",
                                retryable: false)
                        }
                    }
                    pools[account] = clients(accountTLS)
                    let baseURLs =
                        provider == .apns
                        ? [configuration.apnsBaseURL, configuration.apnsSandboxBaseURL] : [configuration.fcmBaseURL]
                    for baseURL in baseURLs where plain[account]?[baseURL] == nil {
                        guard let endpoint = HTTP1PushClient.Endpoint(baseURL: baseURL) else { continue }
                        plain[account, default: [:]][baseURL] = HTTP1PushClient(
                            endpoint: endpoint,
                            maxConnections: max(1, configuration.clientsPerProvider) * max(1, http1ConnectionsPerHost))
                    }
                }
            }
        } catch {
            for client in pools.values.joined() { try? client.syncShutdown() }
            throw error
        }
        self.pools = pools
        self.accounts = accounts
        self.plain = plain
    }

    /// The clients `app`'s pushes to `provider` go out on: empty when that side is not configured.
    func pool(_ provider: PushProvider, app: String) -> [HTTPClient] {
        accounts[app]?[provider].flatMap { pools[$0] } ?? []
    }

    /// The number of accounts (and so of separate connection pools) of `provider`.
    public func accountCount(_ provider: PushProvider) -> Int {
        pools.keys.filter { $0.provider == provider }.count
    }

    /// Shuts every client down.
    public func shutdown() async throws {
        for client in plain.values.flatMap(\.values) { client.shutdown() }
        for client in pools.values.joined() { try await client.shutdown() }
    }
}
