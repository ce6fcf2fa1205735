"""The `cnn` model of entrograd-worker (workers/fashion_mnist/cnn_model.h)
in Python: the same layers, names and registration order, so that the
named_parameters() table (the wire contract) is the same."""

import torch
from torch import nn


class FashionCnn(nn.Module):
    def __init__(self, hidden_width=128):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, hidden_width)
        self.fc2 = nn.Linear(hidden_width, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def batch(seed, size=16):
    """Random images and labels, the same for the same seed."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(size, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (size,), generator=generator)
    return images, labels
