import BadgeCore
import BadgeWire

extension RegisteredDevice {
    /// Reads a device from the `devices` columns `token`, `provider`, `topic`, `environment` and `app`.
    init(row: SQLRow) throws {
        guard let token = try row["token"].string,
            let provider = try row["provider"].string.flatMap(PushProvider.init(rawValue:))
        else { throw StoreError.corrupt("bad devices row") }
        var environment: APNsEnvironment?
        if let name = try row["environment"].string {
            guard let value = APNsEnvironment(rawValue: name) else { throw StoreError.corrupt("bad environment") }
            environment = value
        }
        self.init(
            token: token, provider: provider, topic: try row["topic"].string, environment: environment,
            app: try row["app"].string)
    }
}
