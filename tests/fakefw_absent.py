"""A registered framework whose package is not installed: planning must give it `not-installed`
rows without launching anything. Registered with MGBENCH_PLUGINS=fakefw,fakefw_absent."""

from mgbench.frameworks.specs import Capabilities, FrameworkSpec, ModelBuilders, StrategySpec

FRAMEWORK = FrameworkSpec(
    name="absent",
    module="fakefw_absent",
    strategies=(StrategySpec("only", "inprocess", "never runs"),),
    import_names=("mgbench_no_such_package",),
    environment="absent",
    install_hint="pip install mgbench-no-such-package",
    capabilities=Capabilities(ModelBuilders("fakefw_absent", ("tiny",))),
)
