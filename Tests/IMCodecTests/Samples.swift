import IMCodec

/// Hand-written values: one frame per payload kind and per element kind, every field set somewhere.
enum Samples {
    static let conversation = Conversation.with {
        $0.type = .group; $0.targetID = "group-42"; $0.channelID = ""
    }
    static let ultraGroup = Conversation.with {
        $0.type = .ultraGroup; $0.targetID = "ug-1"; $0.channelID = "announcements"
    }
    static let ref = MessageRef.with {
        $0.clientMsgID = "c-1"; $0.serverMsgUID = "s-1"; $0.seq = .max; $0.conversation = conversation
        $0.senderID = "alice"; $0.serverTimeMs = -1
    }

    static let elements: [String: MessageElement] = [
        "text": .text("Hello, 世界 👋 with a \u{0} NUL"),
        "custom": .custom([0, 1, 2, 255], description: "call_invite", ext: "{\"room\":7}"),
        "image": .image(
            format: .jpg,
            [
                ImageInfo(
                    type: .original,
                    uuid: "u1",
                    size: 1_048_576,
                    width: 4032,
                    height: 3024,
                    url: "https://x/o.jpg"
                ),
                ImageInfo(type: .large, uuid: "u2", size: 200_000, width: 960, height: 720, url: "https://x/l.jpg"),
                ImageInfo(type: .thumbnail, uuid: "u3", size: 9_000, width: 264, height: 198, url: "https://x/t.jpg"),
            ]
        ),
        "video": MessageElement.with {
            $0.content = .video(
                VideoElement.with {
                    $0.videoUUID = "v"; $0.videoType = "mp4"; $0.videoSize = 10_000_000; $0.durationS = 61;
                    $0.videoURL = "https://x/v.mp4"
                    $0.snapshotUUID = "s"; $0.snapshotType = "jpg"; $0.snapshotSize = 30_000; $0.snapshotWidth = 640
                    $0.snapshotHeight = 360; $0.snapshotURL = "https://x/s.jpg"
                }
            )
        },
        "sound": MessageElement.with {
            $0.content = .sound(
                SoundElement.with {
                    $0.uuid = "snd"; $0.size = 4_096; $0.durationS = 9; $0.url = "https://x/a.m4a"
                }
            )
        },
        "file": .file(uuid: "f", name: "report.pdf", size: 104_857_600, url: "https://x/f.pdf"),
        "location": .location(latitude: -33.8568, longitude: 151.2153, description: "Sydney Opera House"),
        "face": .face(index: -1, data: [9, 9]),
        "groupTips": MessageElement.with {
            $0.content = .groupTips(
                GroupTipsElement.with {
                    $0.type = .groupInfoChange; $0.groupID = "group-42"; $0.operatorID = "admin";
                    $0.memberIDs = ["bob", "carol"]
                    $0.groupChanges = [
                        GroupChangeInfo.with {
                            $0.type = .name; $0.value = "New name"
                        },
                        GroupChangeInfo.with {
                            $0.type = .shutUpAll; $0.boolValue = true
                        },
                        GroupChangeInfo.with {
                            $0.type = .custom; $0.key = "k"; $0.value = "v"; $0.intValue = 3
                        },
                    ]
                    $0.memberChanges = [
                        MemberChangeInfo.with {
                            $0.userID = "bob"; $0.muteTimeS = 600
                        }
                    ]
                    $0.memberCount = 3; $0.pinnedMessage = ref
                }
            )
        },
        "merger": MessageElement.with {
            $0.content = .merger(
                MergerElement.with {
                    $0.title = "Chat history"; $0.abstracts = ["a: hi", "b: yo"]; $0.compatibleText = "[Chat History]"
                    $0.messages = [message(elements: [.text("inner")])]; $0.messageCount = 1
                }
            )
        },
        "mergerRef": MessageElement.with {
            $0.content = .merger(
                MergerElement.with {
                    $0.title = "Big";
                    $0.ref = MergerRef.with {
                        $0.key = "merger/abc"; $0.size = 123_456; $0.sha256 = Array(repeating: 7, count: 32)
                    }
                    $0.messageCount = 300
                }
            )
        },
    ]

    static func message(elements: [MessageElement]) -> Message {
        Message.with {
            $0.clientMsgID = "c-1"; $0.serverMsgUID = "s-1"; $0.seq = 7; $0.random = .max; $0.senderID = "alice"
            $0.conversation = conversation; $0.clientTimeMs = 1_700_000_000_000; $0.serverTimeMs = 1_700_000_000_123
            $0.priority = .high; $0.status = .sent; $0.messageFlags = .all; $0.targetReceivers = ["bob"]
            $0.at = AtInfo.with {
                $0.userIDs = ["bob"]; $0.atAll = true
            }
            $0.offlinePush = OfflinePushInfo.with {
                $0.title = "t"; $0.description = "d"; $0.ext = "e"; $0.iosSound = "a.caf"; $0.androidSound = "a";
                $0.disabled = true
            }
            $0.cloudCustomData = [1, 0, 2]; $0.customParams = ["b": "2", "a": "", "": "empty key", "é": "x", "B": "y"]
            $0.expansion = ["likes": "3"]; $0.storagePolicy = .counted; $0.quote = ref; $0.elements = elements
            $0.editVersion = 2; $0.senderNickname = "Alice 🌸"
        }
    }

    /// One frame per payload kind.
    static let frames: [String: Frame] = {
        var frames: [String: Frame] = [:]
        for (name, element) in elements { frames["message-\(name)"] = Frame(message(elements: [element])) }
        frames["message-chain"] = Frame(
            message(elements: [.text("a"), elements["image"]!, .face(index: 3), .text("b")])
        )
        frames["receipt"] = Frame(
            .receipt(
                MessageReceipt.with {
                    $0.kind = .delivered; $0.message = ref; $0.userID = "bob"; $0.isPeerRead = true; $0.groupID = "g"
                    $0.readCount = 10; $0.unreadCount = .max; $0.timeMs = 5
                }
            )
        )
        frames["receipts"] = Frame(
            .receipts(
                ReceiptBatch.with {
                    $0.receipts = [
                        MessageReceipt.with {
                            $0.kind = .read; $0.message = ref
                        }, MessageReceipt(),
                    ]
                    $0.c2cReadReceipts = [
                        C2CReadReceipt.with {
                            $0.userID = "bob"; $0.readTimeMs = 99
                        }
                    ]
                }
            )
        )
        frames["c2cReadReceipt"] = Frame(
            .c2cReadReceipt(
                C2CReadReceipt.with {
                    $0.userID = "bob"; $0.readTimeMs = 1
                }
            )
        )
        frames["groupReadMembers"] = Frame(
            .groupReadMembers(
                GroupReadMembers.with {
                    $0.message = ref; $0.read = true; $0.memberIDs = ["a", "b"]; $0.nextSeq = 9; $0.finished = true
                }
            )
        )
        frames["recall"] = Frame(
            .recall(
                RecallEvent.with {
                    $0.message = ref; $0.revokerID = "admin"; $0.reason = "spam"; $0.timeMs = 3
                }
            )
        )
        frames["edit"] = Frame(
            .edit(
                EditEvent.with {
                    $0.message = ref; $0.newMessage = message(elements: [.text("edited")]); $0.editorID = "alice";
                    $0.timeMs = 4
                }
            )
        )
        frames["delete"] = Frame(
            .delete(
                DeleteEvent.with {
                    $0.messages = [ref, ref]; $0.scope = .everyone; $0.operatorID = "a"; $0.timeMs = 5
                }
            )
        )
        frames["typing"] = Frame(
            .typing(
                TypingEvent.with {
                    $0.conversation = ultraGroup; $0.userID = "bob"; $0.state = .started
                }
            )
        )
        frames["markRead"] = Frame(
            .markRead(
                MarkReadEvent.with {
                    $0.conversation = conversation; $0.userID = "bob"; $0.readTimeMs = 8; $0.readSeq = 9;
                    $0.allConversations = false
                }
            )
        )
        frames["markReadAll"] = Frame(
            .markRead(
                MarkReadEvent.with {
                    $0.userID = "bob"; $0.allConversations = true
                }
            )
        )
        frames["systemNotice"] = Frame(
            .systemNotice(
                SystemNotice.with {
                    $0.type = "kicked_offline"; $0.params = ["device": "iPhone", "reason": "login elsewhere"];
                    $0.text = "You were signed out"; $0.timeMs = 6
                }
            )
        )
        frames["sendAck"] = Frame(
            .sendAck(
                SendAck.with {
                    $0.clientMsgID = "c"; $0.serverMsgUID = "s"; $0.seq = 1; $0.serverTimeMs = 2; $0.errorCode = 20007
                    $0.errorDescription = "blocked by the peer"; $0.conversation = conversation
                }
            )
        )
        frames["historyRequest"] = Frame(
            .historyRequest(
                HistoryRequest.with {
                    $0.conversation = conversation; $0.count = 20; $0.cursor = "cur"; $0.direction = .older
                }
            )
        )
        frames["historyResponse"] = Frame(
            .historyResponse(
                HistoryResponse.with {
                    $0.conversation = conversation;
                    $0.messages = [message(elements: [.text("1")]), message(elements: [.text("2")])]
                    $0.nextCursor = "next"; $0.finished = true
                }
            )
        )
        frames["mergerPayload"] = Frame(
            .mergerPayload(MergerPayload.with { $0.messages = [message(elements: [.text("x")])] })
        )
        frames["empty"] = Frame()
        for type in ConversationType.allCases {
            var m = message(elements: [.text("hi")])
            m.conversation = Conversation.with {
                $0.type = type; $0.targetID = "t"; $0.channelID = type == .ultraGroup ? "ch" : ""
            }
            frames["conversation-\(type.protoName)"] = Frame(m)
        }
        return frames
    }()
}
