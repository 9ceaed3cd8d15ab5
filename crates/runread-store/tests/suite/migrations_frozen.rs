//! A released migration is never edited, only followed by a new one: a store that applied
//! migration N must mean the same schema as a store that applies it today. Each migration file is
//! pinned here by its SHA-256; a new migration adds a line, and changing a line means a released
//! migration was edited.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::path::Path;

use sha2::{Digest, Sha256};

/// (file under `migrations/`, its SHA-256), every migration of both stores.
const RELEASED: &[(&str, &str)] = &[
    (
        "sqlite/0001.sql",
        "8f4c6b900f1a6b157633af5b0fc3c34235dd43fe56f50e8a8a47aa6ac195ac61",
    ),
    (
        "sqlite/0002.sql",
        "e03125c7c331ff35c34362f5d71b0ba5c872234067a788eeb32dd46aaab07f87",
    ),
    (
        "sqlite/0003.sql",
        "00228976280f5551a2df73bd1b6ab322d6aa217bb676fc7d59dbad8dc17f255e",
    ),
    (
        "sqlite/0004.sql",
        "1e41eb15de863e089ce7f1e6027c6fe57909286f5149acb70f3acb5e996bce2e",
    ),
    (
        "sqlite/0005.sql",
        "cff53a42bcf5dde4bc0b04d84c43737eb0c5cc2d652671f03b2381c4a8b4fe41",
    ),
    (
        "sqlite/0006.sql",
        "48862561fef67eeeb3407117ddf51448dffb8f4b1be0a9f6c47dd58f85ab0319",
    ),
    (
        "sqlite/0007.sql",
        "41b64d63b0adacb5e61fa08f1f249733f9d703c4ce9b56cbd2ae0f4fd9bef225",
    ),
    (
        "sqlite/0008.sql",
        "e5f4d832e6cca0e68bc6d68bf312350f8c07161fc54a3016db0b49d827762ba9",
    ),
    (
        "sqlite/0009.sql",
        "fe4e5cb45fe62e50f944b5161b3ecee90bd5047dbe9bb5f791d8540535627efb",
    ),
    (
        "sqlite/0010.sql",
        "8d23d4e2ecef41f2f98dc69caffb107e230e49f62556d7e24657065f242d5eda",
    ),
    (
        "sqlite/0011.sql",
        "24a116bb25467052394c2cb9535aa34d76439e0cd8d8edc24a8b7111bd88118a",
    ),
    (
        "sqlite/0012.sql",
        "3dbb81f3eeb0845e75d0ffa2601c64c2f34f54ebba8a8a9d09a5f9f9ad69a10b",
    ),
    (
        "sqlite/0014.sql",
        "71ef501c2a000e18c05a9f75f7f07ed65006856b68c5b2dbd55963888674cb1f",
    ),
    (
        "sqlite/0015.sql",
        "c9d5a89d8dab065eecb1c93993d04e84e9fded1283a6ea2badea519f1ced408f",
    ),
    (
        "sqlite/0016.sql",
        "7199196952b6edcff8eff32be37d82bfdc52b330fd1c6a4804cafdbcaa737179",
    ),
    (
        "sqlite/0017.sql",
        "f44a7f64e0ef2e9faf900b90a818aa2457cdf102a4e6042d0339223015bb16b8",
    ),
    (
        "sqlite/0018.sql",
        "2f88258e28c22e4bccf0d5e41f6bb3cd2c26bc7413c818953fa78f3590d5128e",
    ),
    (
        "sqlite/0019.sql",
        "4da021f2ade32761d2fd9e9c4da18ecbe67e43d20994aaf6fe7334f937395bf3",
    ),
    (
        "sqlite/0020.sql",
        "b20461e165a21325ea37e1945e8b394b52cfa0efddaaa55f79fd4692f1e7a43b",
    ),
    (
        "sqlite/0013.sql",
        "387a29b2903648bf7395a1189f2d77763ac7ece9bc628287bb70587cb937edee",
    ),
    (
        "postgres/0001.sql",
        "9c51c4639f75e739ff6e57b24e0f6ddce96964a58de1e3ad56475e068b091991",
    ),
    (
        "postgres/0002.sql",
        "ca0e9f02c5d388230da7b006e8d2bc309c972e8db8c12db6d659878ebbc6a577",
    ),
    (
        "postgres/0003.sql",
        "6fa7814de1bde31d5e626f558ee3b0069797d048d4998721b9948f05941a0327",
    ),
    (
        "postgres/0004.sql",
        "b468833e62cdada43160b2a750bc6ff152f1f9bf41e59905d2e14649bdcfc53f",
    ),
    (
        "postgres/0005.sql",
        "6d9f14988fce2f26cc9f0acae71f5311b139e89e431b3dd2b26d47a0c95d0517",
    ),
    (
        "postgres/0006.sql",
        "300c249c2f8fe572c7976b4d3b726a786863376bb3ce4caceacd5b696bedc63f",
    ),
    (
        "postgres/0007.sql",
        "caaddb1496c7940a75939e998d36dc15080a67ed3d391a9290d01e553821e172",
    ),
    (
        "postgres/0008.sql",
        "57935a6379cd6146678110724a2dbc7d01e84e10a684648fe419978efebb2ac3",
    ),
    (
        "postgres/0009.sql",
        "0b510be4435fa8d5340fe62f3d970324ada5a73ed63dd6f431dfaf7a2f9468f4",
    ),
    (
        "postgres/0010.sql",
        "cd549394a24ed3d4722e3981bd28be099a4d6be719e6d51fd40f695ec056078f",
    ),
    (
        "postgres/0011.sql",
        "566684f1f4bf290d0c3299c54be94b33416970e03cdb21cf797c77c5af5f3e09",
    ),
    (
        "postgres/0012.sql",
        "745f02096c3a39fb5a64d2acd0887de75b0db7c46b1e3a09b203f142f21e7a77",
    ),
    (
        "postgres/0013.sql",
        "903940d2b8c3029cb1ed23ad22c778f5dd699a9214eb7eccdf2074a2d3479f1b",
    ),
    (
        "postgres/0014.sql",
        "13addf2d11b4f71e0db9deb3513af91d57a7427c4795653920be88cdc263d586",
    ),
    (
        "postgres/0015.sql",
        "54ada78aa8740e46b2dcff886fd779d4af38acceb47f36ba0161ed47ed6637c6",
    ),
    (
        "postgres/0016.sql",
        "7fe2a7c67a9964c40b3f60c3be014e0751cba6702fb137be79a61d68c4db06fe",
    ),
    (
        "postgres/0017.sql",
        "f44a7f64e0ef2e9faf900b90a818aa2457cdf102a4e6042d0339223015bb16b8",
    ),
    (
        "postgres/0018.sql",
        "2f88258e28c22e4bccf0d5e41f6bb3cd2c26bc7413c818953fa78f3590d5128e",
    ),
    (
        "postgres/0019.sql",
        "14d36dc545b91420ab29636cf07be14c712c04681aff33e606dc2161d6eb9a26",
    ),
    (
        "postgres/0020.sql",
        "7a10fd384f38555cd4f3b403111e42cb8caf8af3c2b4a8176d8a8d119d56354a",
    ),
];

#[test]
fn every_released_migration_is_byte_for_byte_what_was_released() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut on_disk = Vec::new();
    for dialect in ["sqlite", "postgres"] {
        for entry in std::fs::read_dir(root.join(dialect)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            on_disk.push(format!("{dialect}/{name}"));
        }
    }
    on_disk.sort();
    let mut pinned: Vec<String> = RELEASED.iter().map(|(f, _)| (*f).to_owned()).collect();
    pinned.sort();
    assert_eq!(
        on_disk, pinned,
        "a migration file without a pin, or a pin without its file"
    );
    for (file, digest) in RELEASED {
        let bytes = std::fs::read(root.join(file)).unwrap();
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            *digest,
            "{file} was edited after its release: add a new migration instead"
        );
    }
}
