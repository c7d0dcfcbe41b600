"""The gradient hand-over to Horovod: a channels_last gradient goes over as a contiguous view of
its own memory and comes back in its own layout, so the optimizer's gradient keeps its weight's
strides (torch's foreach step needs that for its fast path) and no copy is made."""

import torch

from mgbench.frameworks.horovod.exchange import InPlaceLayout, inverse, memory_order


def channels_last_gradient(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(shape).contiguous(memory_format=torch.channels_last)


def test_a_channels_last_gradient_is_handed_over_without_a_copy_and_reduced_in_place():
    gradient = channels_last_gradient((8, 4, 3, 3))
    expected = gradient * 2
    handed, order = InPlaceLayout.compress(gradient)
    assert not gradient.is_contiguous()
    assert handed.is_contiguous()
    assert handed.data_ptr() == gradient.data_ptr()
    handed.mul_(2)  # what an in-place all-reduce of two equal ranks' sums does
    back = InPlaceLayout.decompress(handed, order)
    assert back.shape == gradient.shape
    assert back.stride() == gradient.stride()
    assert torch.equal(back, expected)
    assert torch.equal(gradient, expected)


def test_the_returned_gradient_keeps_its_weights_strides_which_a_contiguous_copy_loses():
    weight = channels_last_gradient((16, 8, 7, 7))
    gradient = torch.randn_like(weight)
    back = InPlaceLayout.decompress(*InPlaceLayout.compress(gradient))
    assert back.stride() == weight.stride()
    assert gradient.contiguous().stride() != weight.stride()


def test_contiguous_gradients_go_over_as_they_are():
    for gradient in (
        torch.randn(10),
        torch.randn(4, 5),
        torch.randn(8, 4, 1, 1).contiguous(memory_format=torch.channels_last),
    ):
        handed, order = InPlaceLayout.compress(gradient)
        assert handed is gradient and order is None
        assert InPlaceLayout.decompress(handed, order) is gradient


def test_a_gradient_that_is_not_dense_goes_over_as_a_copy():
    gradient = torch.randn(6, 8)[:, ::2]
    handed, order = InPlaceLayout.compress(gradient)
    assert handed.is_contiguous() and handed.data_ptr() != gradient.data_ptr()
    assert torch.equal(InPlaceLayout.decompress(handed, order), gradient)


def test_memory_order_sorts_dimensions_by_stride_and_inverse_undoes_it():
    tensor = torch.randn(2, 3, 4, 5).permute(2, 0, 3, 1)
    order = memory_order(tensor)
    assert tensor.permute(order).is_contiguous()
    assert tensor.permute(order).permute(inverse(order)).stride() == tensor.stride()
    assert inverse((2, 0, 3, 1)) == (1, 3, 0, 2)
