import pytest

from fixer.explain.libraries import library_of


@pytest.mark.parametrize(
    ("path", "library"),
    [
        ("/usr/local/lib/python3.8/site-packages/torch/optim/sgd.py", "torch.optim"),
        ("/usr/local/lib/python3.8/dist-packages/transformers/modeling_utils.py", "transformers"),
        (r"C:\Users\me\anaconda3\Lib\site-packages\torch\nn\modules\module.py", "torch.nn"),
        ("/home/zong/code/pytorch/torch/nn/functional.py", "torch.nn"),  # a PyTorch source checkout
        ("/data/users/brister/pytorch/torch/_subclasses/fake_tensor.py", "torch._subclasses"),
        ("/usr/lib/python3.10/runpy.py", "python"),
        ("train.py", None),
        ("/home/me/torch/train.py", None),  # a user's folder named torch stays user code
        ("Cell In[3]", None),
    ],
)
def test_library_of(path, library):
    assert library_of(path) == library
