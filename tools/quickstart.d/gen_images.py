"""Generate an ImageFolder tree of real JPEG and PNG images, deterministically.

usage: gen_images.py ROOT N_IMAGES [N_CLASSES]
"""
import os
import random
import sys

from PIL import Image, ImageDraw


def main():
    root, n = sys.argv[1], int(sys.argv[2])
    n_classes = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    rng = random.Random(1234)
    for i in range(n):
        cls = f"class_{i % n_classes:02d}"
        d = os.path.join(root, cls)
        os.makedirs(d, exist_ok=True)
        w, h = rng.randint(96, 256), rng.randint(96, 256)
        img = Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(img)
        for _ in range(12):
            box = sorted(rng.randrange(w) for _ in range(2)) + sorted(rng.randrange(h) for _ in range(2))
            draw.rectangle([box[0], box[2], box[1], box[3]],
                           fill=tuple(rng.randrange(256) for _ in range(3)))
        if i % 4 == 3:
            img.save(os.path.join(d, f"img_{i:06d}.png"))
        else:
            img.save(os.path.join(d, f"img_{i:06d}.jpg"), quality=90)


if __name__ == "__main__":
    main()
