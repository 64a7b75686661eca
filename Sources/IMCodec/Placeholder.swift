public enum IMCodecPlaceholder {}
