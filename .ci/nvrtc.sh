# NVRTC for the CUDA code generator's tests; source it from the repository root
# (`. .ci/nvrtc.sh`). Needs pip and PyPI, not a GPU.
#
# Installs NVIDIA's `nvidia-cuda-nvrtc` wheel, 13.0.x (the CUDA major version cudarc is
# built for: it loads `libnvrtc.so.13`), into target/nvrtc once, then exports
# LD_LIBRARY_PATH so cudarc's dynamic loader finds the library, and TESSERA_REQUIRE_NVRTC=1
# so the tests fail, instead of skipping, when NVRTC does not load.

nvrtc_spec='nvidia-cuda-nvrtc==13.0.*'
nvrtc_dir="$PWD/target/nvrtc"
nvrtc_lib="$nvrtc_dir/nvidia/cu13/lib"

nvrtc_installed() {
  [ -e "$nvrtc_lib/libnvrtc.so.13" ] && compgen -G "$nvrtc_dir/nvidia_cuda_nvrtc-13.0.*.dist-info" >/dev/null
}

if ! nvrtc_installed; then
  if command -v python3 >/dev/null 2>&1; then
    nvrtc_pip=(python3 -m pip)
  else
    nvrtc_pip=(pip)
  fi
  echo "installing $nvrtc_spec into $nvrtc_dir" >&2
  PIP_ROOT_USER_ACTION=ignore "${nvrtc_pip[@]}" install --quiet --disable-pip-version-check --no-deps --upgrade \
    --target "$nvrtc_dir" "$nvrtc_spec"
fi
if ! nvrtc_installed; then
  echo "error: $nvrtc_spec did not install $nvrtc_lib/libnvrtc.so.13" >&2
  return 1 2>/dev/null || exit 1
fi

export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSERA_REQUIRE_NVRTC=1
