import IMCodec
import Testing

@Suite("Product rules")
struct ValidationTests {
    func rules(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> Set<ValidationIssue.Rule> {
        Set(frame.validate(limits: limits).map(\.rule))
    }

    func merger(depth: Int) -> Message {
        var message = Message.c2cText(from: "a", to: "b", "leaf")
        for layer in 0..<depth {
            message = Message.merger(from: "a", in: .oneToOne("b"), title: "layer \(layer)", messages: [message])
        }
        return message
    }

    @Test("well-formed messages pass")
    func valid() {
        #expect(Frame(Message.c2cText(from: "a", to: "b", "hi")).validate().isEmpty)
        #expect(Frame(Message.groupText(from: "a", group: "g", "hi", atUserIDs: ["b"], atAll: true)).validate().isEmpty)
        #expect(Frame(merger(depth: 3)).validate().isEmpty)
    }

    @Test("a merger of more than 300 messages is reported")
    func mergerSize() {
        let messages = (0..<301).map { Message.c2cText(from: "a", to: "b", "m\($0)") }
        #expect(rules(Frame(Message.merger(from: "a", in: .oneToOne("b"), title: "t", messages: messages))) == [.mergerTooManyMessages])
        let ok = Array(messages.prefix(300))
        #expect(Frame(Message.merger(from: "a", in: .oneToOne("b"), title: "t", messages: ok)).validate().isEmpty)
    }

    @Test("mergers nested deeper than 100 layers are reported")
    func mergerDepth() {
        #expect(Frame(merger(depth: 100)).validate().isEmpty)
        #expect(rules(Frame(merger(depth: 101))) == [.mergerTooDeep])
        var limits = ValidationLimits()
        limits.maxMergerDepth = 2
        #expect(rules(Frame(merger(depth: 3)), limits: limits) == [.mergerTooDeep])
    }

    @Test("@ lists: at most 30 users, and only in group conversations")
    func atRules() {
        let many = (0..<31).map { "u\($0)" }
        #expect(rules(Frame(Message.groupText(from: "a", group: "g", "hi", atUserIDs: many))) == [.atListTooLong])
        var c2c = Message.c2cText(from: "a", to: "b", "hi")
        c2c.at = AtInfo.with { $0.atAll = true }
        #expect(rules(Frame(c2c)) == [.atOutsideGroup])
    }

    @Test("targeted receivers only in groups")
    func targeted() {
        var c2c = Message.c2cText(from: "a", to: "b", "hi")
        c2c.targetReceivers = ["c"]
        #expect(rules(Frame(c2c)) == [.targetedReceiversOutsideGroup])
        var group = Message.groupText(from: "a", group: "g", "hi")
        group.targetReceivers = ["c"]
        #expect(Frame(group).validate().isEmpty)
    }

    @Test("files above 100 MB and locations off Earth are reported")
    func sizesAndRanges() {
        let big = Message(from: "a", in: .oneToOne("b"), elements: [.file(uuid: "f", name: "x", size: 104_857_601, url: "u")])
        #expect(rules(Frame(big)) == [.fileTooLarge])
        let limit = Message(from: "a", in: .oneToOne("b"), elements: [.file(uuid: "f", name: "x", size: 104_857_600, url: "u")])
        #expect(Frame(limit).validate().isEmpty)
        for (lat, lon) in [(91.0, 0.0), (0.0, -180.5), (Double.nan, 0.0)] {
            let place = Message(from: "a", in: .oneToOne("b"), elements: [.location(latitude: lat, longitude: lon)])
            #expect(rules(Frame(place)) == [.locationOutOfRange])
        }
    }

    @Test("chain rules: merger, group tips, sound, video and file stand alone; no empty chains or elements")
    func chainRules() {
        let file = MessageElement.file(uuid: "f", name: "x", size: 1, url: "u")
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [.text("see"), file]))) == [.elementMustBeAlone])
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: []))) == [.emptyElementChain])
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [MessageElement()]))) == [.emptyElement])
        let rich = Message(from: "a", in: .oneToOne("b"), elements: [.text("a"), .face(index: 1), .location(latitude: 1, longitude: 2), .text("b")])
        #expect(Frame(rich).validate().isEmpty)
    }

    @Test("group tips belong to groups and cannot be forwarded in a merger")
    func groupTips() {
        let tips = MessageElement.with { $0.content = .groupTips(GroupTipsElement.with { $0.type = .join }) }
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [tips]))) == [.groupTipsOutsideGroup])
        let inGroup = Message(from: "a", in: .group("g"), elements: [tips])
        #expect(Frame(inGroup).validate().isEmpty)
        #expect(rules(Frame(Message.merger(from: "a", in: .group("g"), title: "t", messages: [inGroup]))) == [.mergerContainsGroupTips])
    }

    @Test("every violation is reported, with a path")
    func everyViolation() {
        var message = Message.c2cText(from: "a", to: "b", "hi")
        message.at = AtInfo.with { $0.userIDs = (0..<40).map { "u\($0)" } }
        message.targetReceivers = ["c"]
        message.elements.append(.file(uuid: "f", name: "x", size: 200_000_000, url: "u"))
        let issues = Frame(message).validate()
        #expect(Set(issues.map(\.rule)) == [.atOutsideGroup, .atListTooLong, .targetedReceiversOutsideGroup, .elementMustBeAlone, .fileTooLarge])
        #expect(issues.contains { $0.path == "message.elements[1].file" })
    }
}
