extension C2CReadReceipt {
    /// A one-to-one read receipt from Tencent's timestamp, which is in seconds (the schema's times
    /// are milliseconds). Seconds beyond what milliseconds can hold are clamped.
    public init(userID: String, tencentTimestamp seconds: Int64) {
        self.init()
        self.userID = userID
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        readTimeMs = overflow ? (seconds < 0 ? .min : .max) : ms
    }

    /// The read time in seconds, as Tencent's C2C receipt gives it (rounded down).
    public var tencentTimestamp: Int64 {
        let (seconds, rest) = readTimeMs.quotientAndRemainder(dividingBy: 1000)
        return rest < 0 ? seconds - 1 : seconds
    }
}
