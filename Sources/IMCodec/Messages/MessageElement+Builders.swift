/// Builders for each element kind; the BuildingFrames article shows them all.
extension MessageElement {
    /// A text element.
    public static func text(_ text: String) -> MessageElement {
        MessageElement.with { $0.content = .text(TextElement.with { $0.text = text }) }
    }

    /// A custom (signaling) element.
    public static func custom(_ data: [UInt8], description: String = "", ext: String = "") -> MessageElement {
        MessageElement.with {
            $0.content = .custom(
                CustomElement.with {
                    $0.data = data; $0.description = description; $0.ext = ext
                }
            )
        }
    }

    /// A face (sticker) element.
    public static func face(index: Int32, data: [UInt8] = []) -> MessageElement {
        MessageElement.with {
            $0.content = .face(
                FaceElement.with {
                    $0.index = index; $0.data = data
                }
            )
        }
    }

    /// A location element.
    public static func location(latitude: Double, longitude: Double, description: String = "") -> MessageElement {
        MessageElement.with {
            $0.content = .location(
                LocationElement.with {
                    $0.latitude = latitude; $0.longitude = longitude; $0.description = description
                }
            )
        }
    }

    /// An image element with its renditions (original, large, thumbnail).
    public static func image(format: ImageFormat, _ renditions: [ImageInfo]) -> MessageElement {
        MessageElement.with {
            $0.content = .image(
                ImageElement.with {
                    $0.format = format; $0.images = renditions
                }
            )
        }
    }

    /// A file element.
    public static func file(uuid: String, name: String, size: UInt64, url: String) -> MessageElement {
        MessageElement.with {
            $0.content = .file(
                FileElement.with {
                    $0.uuid = uuid; $0.name = name; $0.size = size; $0.url = url
                }
            )
        }
    }

    /// A voice element: the recording's id, byte size, length and download URL.
    public static func sound(uuid: String, size: UInt64, durationS: UInt32, url: String) -> MessageElement {
        MessageElement.with {
            $0.content = .sound(
                SoundElement.with {
                    $0.uuid = uuid; $0.size = size; $0.durationS = durationS; $0.url = url
                }
            )
        }
    }

    /// A video element with its snapshot (the cover image shown before it plays).
    /// - Parameters:
    ///   - video: The video file: id, container format ("mp4"), byte size, download URL.
    ///   - durationS: Its length in seconds.
    ///   - snapshot: The cover image: id, image format ("jpg"), byte size, width, height, URL.
    public static func video(
        _ video: (uuid: String, type: String, size: UInt64, url: String),
        durationS: UInt32,
        snapshot: (uuid: String, type: String, size: UInt64, width: UInt32, height: UInt32, url: String)
    ) -> MessageElement {
        MessageElement.with {
            $0.content = .video(
                VideoElement.with {
                    $0.videoUUID = video.uuid; $0.videoType = video.type; $0.videoSize = video.size
                    $0.videoURL = video.url; $0.durationS = durationS
                    $0.snapshotUUID = snapshot.uuid; $0.snapshotType = snapshot.type; $0.snapshotSize = snapshot.size
                    $0.snapshotWidth = snapshot.width; $0.snapshotHeight = snapshot.height;
                    $0.snapshotURL = snapshot.url
                }
            )
        }
    }

    /// A poll element whose options get the ids 1, 2, 3... in order. Votes name the poll by `id`.
    public static func poll(
        id: String,
        question: String,
        options: [String],
        multipleChoice: Bool = false,
        anonymous: Bool = false,
        closeTimeMs: Int64 = 0
    ) -> MessageElement {
        MessageElement.with {
            $0.content = .poll(
                PollElement.with {
                    $0.pollID = id
                    $0.question = question
                    $0.options = options.enumerated().map { index, text in
                        PollOption.with {
                            $0.id = UInt32(clamping: index + 1); $0.text = text
                        }
                    }
                    $0.multipleChoice = multipleChoice
                    $0.anonymous = anonymous
                    $0.closeTimeMs = closeTimeMs
                }
            )
        }
    }

    /// A merger (combined-forward) element holding `messages` inline.
    public static func merger(
        title: String,
        abstracts: [String],
        compatibleText: String,
        messages: [Message]
    )
        -> MessageElement
    {
        MessageElement.with {
            $0.content = .merger(
                MergerElement.with {
                    $0.title = title
                    $0.abstracts = abstracts
                    $0.compatibleText = compatibleText
                    $0.messages = messages
                    $0.messageCount = UInt32(clamping: messages.count)
                }
            )
        }
    }
}

extension ImageInfo {
    /// One rendition of an image.
    public init(type: ImageType, uuid: String, size: UInt64, width: UInt32, height: UInt32, url: String) {
        self.init()
        self.type = type
        self.uuid = uuid
        self.size = size
        self.width = width
        self.height = height
        self.url = url
    }
}
