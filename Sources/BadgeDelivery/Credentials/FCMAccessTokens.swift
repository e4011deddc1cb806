import AsyncHTTPClient
import Foundation
import NIOCore
import ProviderAuth

/// OAuth2 access tokens for FCM HTTP v1, obtained with a service account's signed assertion (RFC 7523) from its
/// `token_uri`, cached and refreshed before they expire: once less than a tenth of their lifetime (at most five
/// minutes) is left. Concurrent callers share one fetch.
actor FCMAccessTokens {
    private struct AccessToken {
        var value: String
        var refreshAt: Date
    }

    private let account: ServiceAccount
    private let client: HTTPClient
    private let timeout: TimeAmount
    private var current: AccessToken?
    private var fetching: Task<AccessToken, any Error>?

    init(account: ServiceAccount, client: HTTPClient, timeout: TimeAmount) {
        self.account = account
        self.client = client
        self.timeout = timeout
    }

    /// A valid access token (fetched now if none is cached or the cached one is due for refresh).
    func token() async throws -> String {
        if let current, Date() < current.refreshAt { return current.value }
        let task: Task<AccessToken, any Error>
        if let fetching {
            task = fetching
        } else {
            let (account, client, timeout) = (account, client, timeout)
            task = Task { try await Self.fetch(account: account, client: client, timeout: timeout) }
            fetching = task
        }
        do {
            let token = try await task.value
            if fetching == task { fetching = nil }
            current = token
            return token.value
        } catch {
            if fetching == task { fetching = nil }
            throw error
        }
    }

    /// FCM refused `token` (401): forget it, so that the next call fetches a new one.
    func invalidate(_ token: String) {
        if current?.value == token { current = nil }
    }

    private static func fetch(
        account: ServiceAccount, client: HTTPClient, timeout: TimeAmount
    ) async throws
        -> AccessToken
    {
        let now = Date()
        let assertion = try account.assertion(issuedAt: Int64(now.timeIntervalSince1970))
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(
                string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: timeout)
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw CredentialError(
                code: .tokenEndpointUnreachable, message: "the FCM token endpoint could not be reached: \(error)",
                retryable: true)
        }
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: Double?
            var error: String?
            var error_description: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: Data(body.readableBytesView))
        let status = Int(response.status.code)
        guard status == 200, let value = answer?.access_token, !value.isEmpty else {
            let reason = [answer?.error, answer?.error_description].compactMap { $0 }.joined(separator: ": ")
            throw CredentialError(
                code: .tokenRefused,
                message: "the FCM token endpoint answered \(status)" + (reason.isEmpty ? "" : " \(reason)"),
                retryable: status == 429 || status >= 500)
        }
        let lifetime = max(answer?.expires_in ?? 3600, 1)
        return AccessToken(value: value, refreshAt: now.addingTimeInterval(lifetime - min(lifetime / 10, 300)))
    }
}
