import IMCodec

/// One frame per payload kind that breaks no product rule (`validate()` is empty), with every
/// field a rule looks at set: the base cases ValidationTests breaks one rule at a time.
enum ValidFrames {
    static let group = Conversation.group("@TGS#2J4SZEAEL")
    static let c2c = Conversation.oneToOne("user_10086")

    static func ref(in conversation: Conversation = group, sender: String = "user_10010") -> MessageRef {
        MessageRef.with {
            $0.clientMsgID = "cli-7f3a9c2e-0011"; $0.serverMsgUID = "144115233874815003-1732188060-783368690"
            $0.seq = 131; $0.conversation = conversation; $0.senderID = sender; $0.serverTimeMs = 1_732_188_060_133
        }
    }

    static func message(in conversation: Conversation = group, _ text: String = "hello") -> Message {
        var message = Message(
            from: "user_10010",
            in: conversation,
            elements: [.text(text)],
            clientMsgID: "cli-7f3a9c2e-0011",
            clientTimeMs: 1_732_188_060_000
        )
        message.serverMsgUID = "144115233874815003-1732188060-783368690"
        message.seq = 131
        message.serverTimeMs = 1_732_188_060_133
        return message
    }

    static let receipt = MessageReceipt.with {
        $0.kind = .read; $0.message = ref(in: c2c); $0.userID = "user_10086"; $0.isPeerRead = true
        $0.timeMs = 1_732_188_100_000
    }
    static let groupReceipt = MessageReceipt.with {
        $0.kind = .read; $0.message = ref(); $0.groupID = "@TGS#2J4SZEAEL"; $0.readCount = 42; $0.unreadCount = 15
        $0.timeMs = 1_732_188_100_000
    }
    static let c2cReadReceipt = C2CReadReceipt.with {
        $0.userID = "user_10086"; $0.readTimeMs = 1_732_188_100_000
    }

    static var edited: Message {
        var message = message(in: group, "hello (edited)")
        message.editVersion = 1
        return message
    }

    static let receipts = ReceiptBatch.with {
        $0.receipts = [receipt, groupReceipt]; $0.c2cReadReceipts = [c2cReadReceipt]
    }
    static let groupReadMembers = GroupReadMembers.with {
        $0.message = ref(); $0.read = true; $0.memberIDs = ["user_20001", "user_20003"]; $0.nextSeq = 3
    }
    static let recall = RecallEvent.with {
        $0.message = ref(); $0.revokerID = "user_10010"; $0.reason = "wrong group"; $0.timeMs = 1_732_188_090_000
    }
    static let edit = EditEvent.with {
        $0.message = ref(); $0.newMessage = edited; $0.editorID = "user_10010"; $0.timeMs = 1_732_188_095_000
    }
    static let delete = DeleteEvent.with {
        $0.messages = [
            ref(),
            MessageRef.with {
                $0.senderID = "user_20004"; $0.clientMsgID = "cli-9e8d7c6b-0042"
            },
        ]
        $0.scope = .everyone; $0.operatorID = "user_10010"; $0.timeMs = 1_732_190_000_000
    }
    static let typing = TypingEvent.with {
        $0.conversation = c2c; $0.userID = "user_10010"; $0.state = .started
    }
    static let markRead = MarkReadEvent.with {
        $0.conversation = group; $0.userID = "user_10010"; $0.readTimeMs = 1_732_188_060_133; $0.readSeq = 131
    }
    static let markReadAll = MarkReadEvent.with {
        $0.userID = "user_10010"; $0.readTimeMs = 1_732_190_000_000; $0.allConversations = true
    }
    static let systemNotice = SystemNotice.with {
        $0.type = "kicked_offline"; $0.params = ["platform": "iOS"]; $0.text = "signed in elsewhere"; $0.timeMs = 1
    }
    static let sendAck = SendAck.with {
        $0.clientMsgID = "cli-7f3a9c2e-0011"; $0.serverMsgUID = "144115233874815003-1732188060-783368690"; $0.seq = 131
        $0.serverTimeMs = 1_732_188_060_133; $0.conversation = group
    }
    static let sendAckFailed = SendAck.with {
        $0.clientMsgID = "cli-7f3a9c2e-0013"; $0.errorCode = 80001; $0.errorDescription = "sensitive words"
        $0.conversation = group
    }
    static let historyRequest = HistoryRequest.with {
        $0.conversation = group; $0.count = 20; $0.cursor = "eyJzZXEiOjExOH0="; $0.direction = .older
    }
    static let historyResponse = HistoryResponse.with {
        $0.conversation = group; $0.messages = [message(), message(in: group, "second")]
        $0.nextCursor = "eyJzZXEiOjExNH0="
    }
    static let mergerPayload = MergerPayload.with { $0.messages = [message(in: c2c), message(in: c2c, "b")] }

    // Schema version 2: the session layer and the message features.
    static let seqs = [
        ConversationSeq.with {
            $0.conversation = group; $0.seq = 131
        },
        ConversationSeq.with {
            $0.conversation = c2c; $0.seq = 7
        },
    ]
    static let loginRequest = LoginRequest.with {
        $0.userID = "user_10010"; $0.token = "eJyrVgrxCdYrSy1SslIy0jNQ0gHzM1NS84ozM3PLMvMywlJzs"
        $0.deviceID = "ios-3F2504E0"; $0.platform = .ios; $0.clientVersion = "5.3.425"; $0.lastSeen = seqs
        $0.readerVersion = 2
    }
    static let loginResult = LoginResult.with {
        $0.serverTimeMs = 1_732_188_060_133; $0.sessionID = "sess-7b1c"; $0.heartbeatIntervalS = 30; $0.maxSeqs = seqs
    }
    static let syncRequest = SyncRequest.with {
        $0.conversation = group; $0.fromSeq = 130; $0.toSeq = 131; $0.limit = 100
    }
    static var syncResponse: SyncResponse {
        var second = message(in: group, "second")
        second.seq = 132
        return SyncResponse.with {
            $0.conversation = group; $0.messages = [message(), second]; $0.hasMore = true; $0.nextFromSeq = 133
            $0.maxSeq = 140
        }
    }
    /// A page of a user's stream: a message and a recall, each a whole frame at its position.
    static var streamSyncResponse: StreamSyncResponse {
        var kept = Frame(message())
        kept.streamPosition = 42
        var recall = Frame.recall(ref(), by: "user_10010")
        recall.streamPosition = 44
        return StreamSyncResponse.with {
            $0.frames = [
                StreamFrame.with {
                    $0.position = 42; $0.frame = kept.serializedBytes()
                },
                StreamFrame.with {
                    $0.position = 44; $0.frame = recall.serializedBytes()
                },
            ]
            $0.hasMore = true; $0.nextAfterPosition = 44; $0.headPosition = 60
        }
    }
    static let presence = PresenceUpdate.with {
        $0.userID = "user_10086"; $0.status = .away; $0.lastSeenMs = 1_732_188_000_000; $0.platform = .android
    }
    static let reaction = ReactionEvent.with {
        $0.message = ref(); $0.userID = "user_10086"; $0.emoji = "👍🏽"; $0.action = .add; $0.timeMs = 1_732_188_070_000
        $0.summary = [
            ReactionSummary.with {
                $0.emoji = "👍🏽"; $0.count = 3; $0.userIDs = ["user_10086", "user_20001"]
            }
        ]
    }
    static var poll: Message {
        Message(
            from: "user_10010",
            in: group,
            elements: [
                MessageElement.with {
                    $0.content = .poll(
                        PollElement.with {
                            $0.pollID = "poll-1"; $0.question = "Lunch?"; $0.multipleChoice = true
                            $0.options = [
                                PollOption.with {
                                    $0.id = 1; $0.text = "Noodles"
                                },
                                PollOption.with {
                                    $0.id = 2; $0.text = "Dumplings"
                                },
                            ]
                        }
                    )
                }
            ],
            clientMsgID: "cli-poll-1",
            clientTimeMs: 1_732_188_060_000
        )
    }
    static let pollVote = PollVoteEvent.with {
        $0.pollMessage = ref(); $0.pollID = "poll-1"; $0.voterID = "user_10086"; $0.optionIDs = [1, 2]
    }
    static let pollUpdate = PollUpdate.with {
        $0.pollMessage = ref(); $0.pollID = "poll-1"; $0.closed = true; $0.closedBy = "user_10010"; $0.voterCount = 3
        $0.results = [
            PollOptionResult.with {
                $0.optionID = 1; $0.votes = 2; $0.voterIDs = ["user_10086", "user_20001"]
            },
            PollOptionResult.with {
                $0.optionID = 2; $0.votes = 3
            },
        ]
    }

    static let frames: [String: Frame] = [
        "message": Frame(message()),
        "merger": Frame(merger(layers: 2, leaf: message(in: c2c))),
        "receipt": Frame(.receipt(receipt)),
        "groupReceipt": Frame(.receipt(groupReceipt)),
        "receipts": Frame(.receipts(receipts)),
        "c2cReadReceipt": Frame(.c2cReadReceipt(c2cReadReceipt)),
        "groupReadMembers": Frame(.groupReadMembers(groupReadMembers)),
        "recall": Frame(.recall(recall)),
        "edit": Frame(.edit(edit)),
        "delete": Frame(.delete(delete)),
        "typing": Frame(.typing(typing)),
        "markRead": Frame(.markRead(markRead)),
        "markReadAll": Frame(.markRead(markReadAll)),
        "systemNotice": Frame(.systemNotice(systemNotice)),
        "sendAck": Frame(.sendAck(sendAck)),
        "sendAckFailed": Frame(.sendAck(sendAckFailed)),
        "historyRequest": Frame(.historyRequest(historyRequest)),
        "historyResponse": Frame(.historyResponse(historyResponse)),
        "mergerPayload": Frame(.mergerPayload(mergerPayload)),
        "readReceiptRequest": Frame(
            .readReceiptRequest(ReadReceiptRequest.with { $0.messages = [ref(), ref(in: c2c)] })
        ),
        "groupReadMembersRequest": Frame(
            .groupReadMembersRequest(
                GroupReadMembersRequest.with {
                    $0.message = ref(); $0.filter = .unread; $0.count = 100
                }
            )
        ),
        "loginRequest": Frame(.loginRequest(loginRequest)),
        "loginResult": Frame(.loginResult(loginResult)),
        "loginFailed": Frame(
            .loginResult(
                LoginResult.with {
                    $0.errorCode = 70001; $0.errorDescription = "token expired"
                }
            )
        ),
        "ping": Frame(
            .ping(
                Ping.with {
                    $0.id = 9; $0.timeMs = 1_732_188_060_133
                }
            )
        ),
        "pong": Frame(
            .pong(
                Pong.with {
                    $0.id = 9; $0.timeMs = 1_732_188_060_140
                }
            )
        ),
        "logout": Frame(.logout(Logout.with { $0.sessionID = "sess-7b1c" })),
        "kickedOffline": Frame(
            .kickedOffline(
                KickedOffline.with {
                    $0.reason = .loggedInElsewhere; $0.otherDeviceID = "android-9"; $0.otherPlatform = .android
                }
            )
        ),
        "maxSeqRequest": Frame(.maxSeqRequest(MaxSeqRequest.with { $0.conversations = [group, c2c] })),
        "maxSeqResponse": Frame(.maxSeqResponse(MaxSeqResponse.with { $0.maxSeqs = seqs })),
        "syncRequest": Frame(.syncRequest(syncRequest)),
        "syncResponse": Frame(.syncResponse(syncResponse)),
        "streamSyncRequest": Frame(
            .streamSyncRequest(
                StreamSyncRequest.with {
                    $0.afterPosition = 41; $0.limit = 100
                }
            )
        ),
        "streamSyncResponse": Frame(.streamSyncResponse(streamSyncResponse)),
        "streamAck": Frame(.streamAck(StreamAck.with { $0.position = 44 })),
        "presence": Frame(.presence(presence)),
        "presenceSubscription": Frame(
            .presenceSubscription(
                PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["user_10086", "user_20001"]
                }
            )
        ),
        "membership": Frame(
            .membership(
                MembershipChange.with {
                    $0.action = .join; $0.conversation = group
                }
            )
        ),
        "requestResult": Frame(.requestResult(RequestResult.with { $0.serverTimeMs = 1_732_188_060_133 })),
        "reaction": Frame(.reaction(reaction)),
        "pin": Frame(
            .pin(
                PinEvent.with {
                    $0.conversation = group; $0.message = ref(); $0.pinned = true; $0.operatorID = "user_10010"
                }
            )
        ),
        "poll": Frame(poll),
        "pollVote": Frame(.pollVote(pollVote)),
        "pollUpdate": Frame(.pollUpdate(pollUpdate)),
        "disappearingTimer": Frame(
            .disappearingTimer(
                DisappearingTimerEvent.with {
                    $0.conversation = c2c; $0.expireAfterS = 604_800; $0.operatorID = "user_10010"
                }
            )
        ),
        "receiveOption": Frame(
            .receiveOption(
                ReceiveOptionChange.with {
                    $0.conversation = group; $0.option = .receiveNotNotify; $0.userID = "user_10010"
                }
            )
        ),
        "call": Frame(.call(callInvite)),
        "streamChunk": Frame(.streamChunk(streamChunk)),
        "richContent": Frame(richContent),
        "encrypted": Frame(encrypted),
        "buttons": Frame(buttons),
        "keyPublish": Frame(.keyPublish(KeyPublish.with { $0.bundle = keyBundle })),
        "keyFetchRequest": Frame(
            .keyFetchRequest(
                KeyFetchRequest.with {
                    $0.userID = "user_10086"; $0.kind = .signalPrekeys
                }
            )
        ),
        "keyFetchResponse": Frame(
            .keyFetchResponse(
                KeyFetchResponse.with {
                    $0.userID = "user_10086"; $0.bundles = [keyBundle]
                }
            )
        ),
        "conversationListRequest": Frame(
            .conversationListRequest(
                .with {
                    $0.afterVersion = 207; $0.limit = 50
                }
            )
        ),
        "conversationList": Frame(.conversationList(conversationList)),
        "conversationUpdate": Frame(
            .conversationUpdate(
                ConversationUpdate.with {
                    $0.conversation = group; $0.fields = UInt32(ConversationField.pinned.rawValue)
                    $0.pinned = true
                }
            )
        ),
        "extensionUpdate": Frame(.extensionUpdate(extensionUpdate)),
        "extensionFetchRequest": Frame(.extensionFetchRequest(.with { $0.messages = [ref()] })),
        "extensionFetchResponse": Frame(
            .extensionFetchResponse(
                .with {
                    $0.extensions = [
                        MessageExtension.with {
                            $0.message = ref();
                            $0.entries = extensionUpdate.set.map { entry in
                                ExtensionEntry.with {
                                    $0.key = entry.key; $0.value = entry.value; $0.version = 1
                                }
                            }
                        }
                    ]
                }
            )
        ),
        "blocklistChange": Frame(
            .blocklistChange(
                .with {
                    $0.action = .block; $0.userIDs = ["spam_4401"]
                }
            )
        ),
        "blocklistRequest": Frame(.blocklistRequest(BlocklistRequest())),
        "blocklistResponse": Frame(.blocklistResponse(.with { $0.userIDs = ["spam_4401", "user_20002"] })),
    ]

    /// A group entry with two unread messages, one of which @-mentions everyone and the user.
    static let conversationList = ConversationList.with {
        $0.nextAfterVersion = 212
        $0.conversations = [
            ConversationInfo.with {
                $0.conversation = group; $0.maxSeq = 140; $0.readSeq = 138; $0.unreadCount = 2
                $0.atMe = [
                    AtMe.with {
                        $0.seq = 140; $0.kind = .atAllAtMe
                    }
                ]; $0.version = 212
                $0.readHorizons = [
                    ReadHorizon.with {
                        $0.userID = "user_10086"; $0.readSeq = 140
                    }
                ]
            }
        ]
    }

    /// A member sets one key of a message's extension, from the version it saw (none yet).
    static let extensionUpdate = ExtensionUpdate.with {
        $0.message = ref();
        $0.set = [
            ExtensionEntry.with {
                $0.key = "signup/user_10010"; $0.value = "+1"
            }
        ]
    }

    static let keyBundle = KeyBundle.with {
        $0.userID = "user_10086"; $0.deviceID = "iphone-8f2c"; $0.kind = .signalPrekeys
        $0.bundle = Array(repeating: 0x42, count: 64); $0.oneTimeKeys = [.with { $0.key = [1, 2, 3] }]
    }

    static let callInvite = CallEvent.with {
        $0.callID = "call-5b2e0d1c"; $0.signal = .invite; $0.conversation = c2c; $0.userID = "user_10010"
        $0.inviteeIDs = ["user_10086"]; $0.media = .video; $0.timeoutS = 30; $0.timeMs = 1_732_188_060_133
    }

    static let streamChunk = StreamChunk.with {
        $0.message = ref(in: c2c); $0.streamID = "stream-e41a"; $0.position = 0; $0.text = " Canberra."
        $0.final = true; $0.timeMs = 1_732_188_061_000
    }

    /// A reply with styled text and a quote snapshot, and a captioned image with its metadata.
    static var richContent: Message {
        var reply = message(in: group, "👍 see parse() docs")
        reply.quote = ref(in: group, sender: "user_20001")
        reply.quoteSnapshot = .with {
            $0.authorID = "user_20001"; $0.text = "who fixes parse()?"
        }
        reply.elements = [
            .with {
                $0.content = .text(
                    .with {
                        $0.text = "👍 see parse() docs"
                        $0.styles = [
                            .with {
                                $0.offset = 7; $0.length = 7; $0.style = .code
                            },
                            .with {
                                $0.offset = 15; $0.length = 4; $0.style = .link; $0.url = "https://docs.example.com"
                            },
                        ]
                    }
                )
            },
            .with {
                $0.content = .image(
                    .with {
                        $0.format = .jpg; $0.mimeType = "image/jpeg"; $0.sha256 = Array(repeating: 7, count: 32)
                        $0.caption = "the stack trace"
                        $0.mediaKey = .with {
                            $0.algorithm = "AES-256-GCM"; $0.key = Array(repeating: 1, count: 32)
                        }
                    }
                )
            },
        ]
        return reply
    }

    /// An end-to-end encrypted one-to-one message: the envelope in the clear, one sealed element.
    static var encrypted: Message {
        var sealed = message(in: c2c)
        sealed.elements = [
            .with {
                $0.content = .encrypted(
                    .with {
                        $0.algorithm = "AES-256-GCM"; $0.senderDeviceID = "iphone-8f2c"; $0.keyID = [0, 7]
                        $0.nonce = Array(repeating: 9, count: 12); $0.ciphertext = Array(repeating: 0xA5, count: 40)
                    }
                )
            }
        ]
        return sealed
    }

    /// A bot's text with a row of buttons.
    static var buttons: Message {
        var answer = message(in: c2c, "Ship it?")
        answer.elements.append(
            .with {
                $0.content = .buttons(
                    .with {
                        $0.rows = [
                            .with {
                                $0.buttons = [
                                    .with {
                                        $0.id = "yes"; $0.label = "Yes"; $0.action = .callback; $0.data = [1]
                                    },
                                    .with {
                                        $0.id = "docs"; $0.label = "Docs"; $0.action = .openURL
                                        $0.url = "https://docs.example.com"
                                    },
                                ]
                            }
                        ]
                    }
                )
            }
        )
        return answer
    }

    /// `layers` nested merger layers of realistic messages around `leaf`, as Tencent's clients make
    /// them: each layer is a merger message forwarding the layer below and a text message.
    static func merger(layers: Int, leaf: Message) -> Message {
        var inner = leaf
        for layer in 0..<layers {
            var forwarded = Message.merger(
                from: "user_10010",
                in: c2c,
                title: "Chat history, layer \(layer + 1)",
                messages: [inner, message(in: c2c, "see above")],
                clientMsgID: "cli-merger-\(layer)"
            )
            forwarded.serverMsgUID = "144115233874815003-1732188060-\(layer)"
            forwarded.clientTimeMs = 1_732_188_060_000
            forwarded.random = UInt32(layer)
            inner = forwarded
        }
        return inner
    }

    /// The deepest message a merger layer may hold: an image, whose renditions (ImageInfo) sit 3
    /// levels below the message (MessageElement, ImageElement, ImageInfo), quoting another message
    /// (MessageRef, Conversation: 2 levels).
    static var deepestLeaf: Message {
        var leaf = Message.image(
            from: "user_10086",
            in: c2c,
            format: .jpg,
            renditions: [
                ImageInfo(
                    type: .original,
                    uuid: "img-1",
                    size: 1_048_576,
                    width: 4032,
                    height: 3024,
                    url: "https://x/o.jpg"
                ),
                ImageInfo(
                    type: .thumbnail,
                    uuid: "img-1t",
                    size: 9_000,
                    width: 264,
                    height: 198,
                    url: "https://x/t.jpg"
                ),
            ],
            clientMsgID: "cli-leaf"
        )
        leaf.quote = ref(in: c2c)
        leaf.clientTimeMs = 1_732_188_000_000
        leaf.random = 7
        return leaf
    }
}

extension ValidFrames {
    /// A valid message whose frame encodes to exactly `size` bytes (its cloud custom data fills it).
    static func frame(encodedSize size: Int) -> Frame {
        var filled = message()
        var fill = size
        for _ in 0..<8 {
            filled.cloudCustomData = Array(repeating: 0x5A, count: max(0, fill))
            let count = Frame(filled).serializedBytes().count
            if count == size { break }
            fill += size - count
        }
        return Frame(filled)
    }
}

/// A frame whose message holds `layers` nested mergers (Tencent allows 100) around the deepest
/// message a layer may hold (``ValidFrames/deepestLeaf``).
func nestedMergerFrame(layers: Int) -> Frame {
    Frame(ValidFrames.merger(layers: layers, leaf: ValidFrames.deepestLeaf))
}

/// `value` changed by `change`.
func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var copy = value
    change(&copy)
    return copy
}
