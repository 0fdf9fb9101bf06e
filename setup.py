"""Python package of Labference-ROS (the interfaces are built by CMake, see CMakeLists.txt)."""
from setuptools import find_packages, setup

setup(
    name="labference-ros",
    version="0.1.0",
    description="ROS 2 benchmark: does a laboratory robot's next operation follow from what physically happened?",
    license="Apache-2.0",
    packages=find_packages(include=["labference_ros", "labference_ros.*"]),
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "labference = labference_ros.cli.main:main",
        ],
    },
)
