{
  "targets": [
    {
      "target_name": "worldline_native",
      "sources": [
        "src/addon.c",
        "src/args.c",
        "src/errors.c",
        "src/constants.c",
        "src/openat2.c",
        "src/beneath_fallback.c",
        "src/statx.c",
        "src/rename.c",
        "src/fsync.c",
        "src/xattr.c",
        "src/mount.c",
        "src/mount_tree.c",
        "src/overlay.c",
        "src/fscontext.c",
        "src/fsmount.c",
        "src/idmap.c",
        "src/userns.c",
        "src/mount_template.c",
        "src/sandbox_plan.c",
        "src/sandbox_child.c",
        "src/sandbox_observe.c",
        "src/sandbox_spawn.c",
        "src/sandbox_wire.c",
        "src/sandbox_creds.c",
        "src/sandbox_enter.c",
        "src/sandbox_process.c",
        "src/sandbox_wait.c",
        "src/netns.c",
        "src/loop.c",
        "src/fanotify.c"
      ],
      "defines": ["NAPI_VERSION=8", "_GNU_SOURCE"],
      "cflags": ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-fvisibility=hidden"],
      "cflags!": ["-fno-exceptions"],
      "libraries": ["-lpthread"]
    },
    {
      "target_name": "worldline_shim",
      "type": "executable",
      "sources": [
        "src/shim/shim.c",
        "src/shim/launch.c",
        "src/sandbox_wire.c",
        "src/sandbox_child.c",
        "src/sandbox_creds.c",
        "src/sandbox_observe.c"
      ],
      "defines": ["_GNU_SOURCE"],
      "cflags": ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"],
      "ldflags": ["-static"]
    }
  ]
}
