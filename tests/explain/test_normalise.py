from fixer.explain.normalise import normalise


def test_ordinals_go_but_device_kinds_stay():
    a = normalise("found at least two devices, cuda:0 and cpu!")
    b = normalise("found at least two devices, cuda:3 and cpu!")
    c = normalise("found at least two devices, cuda:3 and cuda:0!")
    assert a == b
    assert a != c


def test_addresses_paths_shapes_and_numbers_become_placeholders():
    text = normalise(
        "Failed running call_function <function layer_norm at 0x7f083c790a60>"
        "(*(FakeTensor(..., device='cuda:0', size=(512, 128)), (128,)) in /home/u/x.py line 10"
    )
    assert "0x7f" not in text and "<ADDR>" in text
    assert "<PATH>" in text and "<SHAPE>" in text and "<N>" in text


def test_legacy_type_names_keep_their_device():
    text = normalise("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)")
    assert text == "Input type (<CUDA_TYPE>) and weight type (<CPU_TYPE>)"
