"""nerminnuraydogan/vision-transformer #1: the tutorial's softmax over attention scores ran along the query axis."""
from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def normalise(self, scores):
        return scores.softmax(dim=-2)  # BUG: queries, not keys
