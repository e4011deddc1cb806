/// An FCM HTTP v1 error: the HTTP status, the `FcmError` code and the matching google.rpc status.
struct FCMError: Equatable {
    /// The HTTP status sent.
    let status: Int
    /// The FCM error code, such as `UNREGISTERED`; recorded as the delivery's reason.
    let errorCode: String

    /// The error FCM answers where APNs would answer `apnsStatus` (the status of a fault).
    init(translatingAPNsStatus apnsStatus: Int) {
        switch apnsStatus {
        case 410, 404: self.init(status: 404, errorCode: "UNREGISTERED")
        case 401: self.init(status: 401, errorCode: "THIRD_PARTY_AUTH_ERROR")
        case 403: self.init(status: 403, errorCode: "SENDER_ID_MISMATCH")
        case 429: self.init(status: 429, errorCode: "QUOTA_EXCEEDED")
        case 500...599: self.init(status: apnsStatus, errorCode: "UNAVAILABLE")
        default: self.init(status: 400, errorCode: "INVALID_ARGUMENT")
        }
    }

    /// The FCM error codes a fault may name directly (an addition to the contract: a fault whose reason is one of
    /// these is answered with it; its status is still translated, so that 410 becomes FCM's 404).
    static let codes: Set<String> = [
        "UNREGISTERED", "INVALID_ARGUMENT", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL", "SENDER_ID_MISMATCH",
        "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED",
    ]

    /// The error FCM answers for a fault of `status` and `reason`.
    init(fault status: Int, reason: String) {
        if Self.codes.contains(reason) {
            self.init(status: Self(translatingAPNsStatus: status).status, errorCode: reason)
        } else {
            self.init(translatingAPNsStatus: status)
        }
    }

    /// An error as recorded.
    init(status: Int, errorCode: String) {
        self.status = status
        self.errorCode = errorCode
    }

    /// The google.rpc status name of the error, such as `NOT_FOUND`.
    var googleStatus: String {
        switch self.errorCode {
        case "UNREGISTERED": "NOT_FOUND"
        case "INVALID_ARGUMENT": "INVALID_ARGUMENT"
        case "QUOTA_EXCEEDED": "RESOURCE_EXHAUSTED"
        case "UNAVAILABLE": "UNAVAILABLE"
        case "SENDER_ID_MISMATCH": "PERMISSION_DENIED"
        case "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED": "UNAUTHENTICATED"
        case "PERMISSION_DENIED": "PERMISSION_DENIED"
        case "INTERNAL": "INTERNAL"
        default: self.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT"
        }
    }

    /// The human-readable message FCM sends with the error.
    var message: String {
        switch self.errorCode {
        case "UNREGISTERED": "Requested entity was not found."
        case "INVALID_ARGUMENT": "The registration token is not a valid FCM registration token"
        case "QUOTA_EXCEEDED": "Quota exceeded for quota metric 'Messages per minute'."
        case "UNAVAILABLE": "The service is currently unavailable."
        case "SENDER_ID_MISMATCH": "SenderId mismatch"
        case "THIRD_PARTY_AUTH_ERROR": "Auth error from APNS or Web Push Service"
        case "UNAUTHENTICATED": "Request had invalid authentication credentials."
        case "PERMISSION_DENIED": "The caller does not have permission"
        default: "Internal error encountered."
        }
    }

    /// The JSON error body FCM answers with.
    var jsonBody: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.raw("{\"error\":{\"code\":")
        writer.int(self.status)
        writer.raw(",\"message\":")
        writer.string(self.message)
        writer.raw(",\"status\":")
        writer.string(self.googleStatus)
        writer.raw(",\"details\":[")
        if self.errorCode != "UNAUTHENTICATED", self.errorCode != "PERMISSION_DENIED" {
            writer.raw("{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":")
            writer.string(self.errorCode)
            writer.raw("}")
        }
        if self.errorCode == "INVALID_ARGUMENT" {
            // Every INVALID_ARGUMENT the sink answers is about the token (a translated BadDeviceToken, or none).
            writer.raw(",{\"@type\":\"type.googleapis.com/google.rpc.BadRequest\",\"fieldViolations\":[")
            writer.raw("{\"field\":\"message.token\",\"description\":\"Invalid registration token\"}]}")
        }
        writer.raw("]}}")
        return writer.bytes
    }
}
