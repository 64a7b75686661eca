print("imcodec")
