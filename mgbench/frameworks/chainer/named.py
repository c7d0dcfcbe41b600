"""Layers under the names torchvision gives the same modules, so that a parameter's path is its
torchvision name with `/` for `.`: that is how the shared initial weights find their links
(`weights.load_initial`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mgbench.frameworks.chainer.imports import chainer

Layer = Callable[[chainer.Variable], chainer.Variable]


class Named(chainer.Chain):
    """Layers applied in order, like torch's `nn.Sequential`: the links registered under the
    names given (torchvision's), the functions (ReLU, pooling), which hold no weights, kept
    apart. chainer.Sequential is no substitute: it numbers only the links, not every layer as
    torch does, and (Chainer 7.8.1) from its third link on names them in another order than it
    applies them, so names would not say which link is which."""

    def __init__(self, layers: Iterable[tuple[str, Layer]]):
        super().__init__()
        self.order: tuple[str, ...] = ()
        self.functions: dict[str, Layer] = {}
        with self.init_scope():
            for name, layer in layers:
                self.order += (name,)
                if isinstance(layer, chainer.Link):
                    setattr(self, name, layer)
                else:
                    self.functions[name] = layer

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        for name in self.order:
            x = self.functions[name](x) if name in self.functions else self[name](x)
        return x


def numbered(*layers: Layer) -> list[tuple[str, Layer]]:
    """Layers named by position, as `nn.Sequential` names them."""
    return [(str(index), layer) for index, layer in enumerate(layers)]
