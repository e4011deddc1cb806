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
        case "THIRD_PARTY_AUTH_ERROR": "UNAUTHENTICATED"
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
        writer.raw(",\"details\":[{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":")
        writer.string(self.errorCode)
        writer.raw("}]}}")
        return writer.bytes
    }
}
