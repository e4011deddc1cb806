import Hummingbird

extension SinkError: HTTPResponseError {
    /// The HTTP status of the answer, ``httpStatus``.
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: self.httpStatus) }

    /// The answer: ``httpStatus`` with `{"error": {"code": …, "message": …}}`.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = SinkAnswers.Failure(error: .init(code: self.code.rawValue, message: self.message))
        return try EditedResponse(status: self.status, response: body).response(from: request, context: context)
    }
}
