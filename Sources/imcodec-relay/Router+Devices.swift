#if Tools
import IMCodec
import IMCodecNIO

/// The devices the relay keeps for each user, and their bound (``RelayConfiguration/maxDevicesPerUser``).
///
/// A device is a `device_id` a user logged in with. The relay keeps, per device, its acknowledged
/// stream position (``Router/devicePositions``), its view-once floor (``Router/deviceFloors``), its
/// end-to-end key bundles (``Router/keyBundles``) and the newest events it sent
/// (``Router/recentEvents``). Without a bound, a client that logged in with a new device id each
/// time made the relay keep all of them for as long as it ran, and made every contact's key fetch
/// carry the bundles of devices long gone.
///
/// A login with a device id the relay does not know, by a user that has the most devices already,
/// makes the relay forget the least recently seen of the user's devices that are offline: the one
/// whose last login or disconnection came first. The order is a counter per user, kept in each
/// device's record (a device seen last gets one more than the user's others), so it survives a
/// restart and needs no clock; a device from before the counter counts as seen first, and ties go
/// by device id. A phone reinstalled with a new device id so replaces the old one, and no one is
/// locked out by devices they no longer have. When every kept device is online, the login is
/// refused (``RelayProtocol/LoginError/tooManyDevices``): the relay never closes a device that is
/// online to make room. A forgotten device that comes back is a new device: it resumes from the
/// position its login names (or the start of the kept stream), and its view-once floor starts again
/// (Router+ViewOnce.swift).
extension Router {
    /// Whether `device` may log in: a device the relay knows, a new one while its user has room, or
    /// a new one once the least recently seen offline devices are forgotten. `false` when every
    /// kept device of the user is online.
    func admitDevice(_ device: DeviceKey) -> Bool {
        let known = knownDevices[device.user] ?? [:]
        guard known[device.device] == nil, known.count >= configuration.maxDevicesPerUser else { return true }
        let online = Set((sessions[device.user] ?? []).map(\.deviceID))
        let offline = known.filter { !online.contains($0.key) }
            .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
        // A lower bound since the last start keeps more: all past it go.
        let excess = known.count - configuration.maxDevicesPerUser + 1
        guard offline.count >= excess else { return false }
        for forgotten in offline.prefix(excess).map(\.key) {
            logger.info(
                "\(device.user) has \(known.count) devices: forgetting \"\(forgotten)\", the least recently seen offline"
            )
            forget(DeviceKey(user: device.user, device: forgotten))
        }
        return true
    }

    /// Notes that `device` was seen at `nowMs` (it logged in, its connection closed, or the relay
    /// stops while it is online): one more than any device of its user, and written to its record
    /// with its floor and the time, from which a start gives its user's `last_seen_ms`.
    func noteSeen(_ device: DeviceKey, atMs nowMs: Int64 = RelayProtocol.nowMs()) {
        guard let floor = deviceFloors[device] else { return }
        let seen = (knownDevices[device.user]?.values.max() ?? 0) + 1
        knownDevices[device.user, default: [:]][device.device] = seen
        var bytes: [UInt8] = []
        SeqListBytes.append([floor, seen, UInt64(clamping: nowMs)], to: &bytes)
        store.batch.records[.deviceFloor(device)] = bytes
    }

    /// Notes a login of `device`, whose user's stream head is `head`: its floor (``deviceFloors``)
    /// is set at its first login, `head`, or 0 for a device that acknowledged a stream position
    /// before the relay kept floors (it was there before); then it is seen (``noteSeen(_:)``).
    func noteLogin(of device: DeviceKey, streamHead head: UInt64) {
        if deviceFloors[device] == nil { deviceFloors[device] = devicePositions[device] == nil ? head : 0 }
        noteSeen(device)
    }

    /// Loads a device's record: its floor, then when it was last seen, as a counter and as a time
    /// (a record from before the bound holds the floor only: seen first; one from before the time
    /// holds two). Its user was last seen when the device of its user seen last was: presence
    /// answers say so after a restart (before, `last_seen_ms` 0, what a user who blocked its watcher
    /// shows).
    func loadDeviceFloor(_ bytes: [UInt8], of device: DeviceKey) {
        guard let seqs = SeqListBytes.seqs(bytes[...]), let floor = seqs.first else { return }
        deviceFloors[device] = floor
        knownDevices[device.user, default: [:]][device.device] = seqs.count > 1 ? seqs[1] : 0
        if seqs.count > 2, let ms = Int64(exactly: seqs[2]), ms > lastOnlineMs[device.user] ?? 0 {
            lastOnlineMs[device.user] = ms
        }
    }

    /// Adds the devices known from their stream positions and key bundles alone, once the records
    /// are loaded (a device from before the floors has a position and no record): seen first.
    func loadKnownDevices() {
        let devices =
            Array(devicePositions.keys)
            + keyBundles.flatMap { user, devices in devices.keys.map { DeviceKey(user: user, device: $0) } }
        for device in devices where knownDevices[device.user]?[device.device] == nil {
            knownDevices[device.user, default: [:]][device.device] = 0
        }
    }

    /// Forgets `device`: its position, floor, key bundles and recent events, in memory and in the
    /// store (what this batch held of it goes too; the store deletes its rows before it writes the
    /// batch's, so a device forgotten and back within one batch keeps what it wrote since).
    private func forget(_ device: DeviceKey) {
        knownDevices[device.user]?[device.device] = nil
        deviceFloors[device] = nil
        devicePositions[device] = nil
        recentEvents[device] = nil
        keyBundles[device.user]?[device.device] = nil
        if keyBundles[device.user]?.isEmpty == true { keyBundles[device.user] = nil }
        store.batch.records[.deviceFloor(device)] = []
        store.batch.records[.sentEvents(device)] = []
        store.batch.devicePositions[device] = nil
        store.batch.keyBundles.removeAll { $0.device == device }
        store.batch.forgottenDevices.insert(device)
    }
}
#endif
