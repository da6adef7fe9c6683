use zipcoll_host::comm::{run_sim, Config, Data, Options};
use zipcoll_host::{DType, ReduceOp};

#[test]
fn smoke() {
    let sums = run_sim(3, Config::sim(), |comm| {
        let x: Vec<f32> = (0..5000).map(|i| comm.rank() as f32 + i as f32 * 0.25).collect();
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut buf = comm.alloc(bytes.len())?;
        buf.copy_from_host(&bytes)?;
        comm.all_reduce(
            Data::InPlace(&mut buf),
            5000,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        )?;
        let out = buf.to_host()?;
        Ok(f32::from_le_bytes(out[4 * 7..4 * 8].try_into().unwrap()))
    })
    .unwrap();
    assert_eq!(sums, vec![3.0 + 3.0 * 7.0 * 0.25; 3]);
}
